//! A Sprout connection endpoint, sans-IO: each endpoint is both a sender and a receiver, and
//! piggybacks its forecast for the incoming direction on its outgoing datagrams.
//!
//! The driver (a simulator or a socket loop) feeds it datagrams and the time, asks it for
//! datagrams to send, and sleeps until [`Connection::poll_timeout`]:
//!
//! ```
//! use sprout_core::{Config, Connection};
//! let mut a = Connection::new(Config::default(), 0).unwrap();
//! let mut b = Connection::new(Config::default(), 0).unwrap();
//! a.send(b"hello".to_vec());
//! let mut buf = Vec::new();
//! // Until the peer's first forecast, the sender works from the prior's forecast.
//! let t = a.poll_transmit(0, &mut buf).unwrap();
//! assert_eq!(t.app_bytes, 5);
//! b.handle_datagram(20_000, &buf).unwrap();
//! assert_eq!(b.recv().unwrap(), b"hello");
//! assert!(a.poll_timeout().is_some());
//! ```

use std::collections::VecDeque;

use crate::params::Config;
use crate::receiver::{Receiver, ReceiverStats};
use crate::sender::Sender;
use crate::wire::{self, Header, WireError};

/// What [`Connection::poll_transmit`] put in the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// Datagram length, in bytes.
    pub len: usize,
    /// Application payload bytes it carries.
    pub app_bytes: usize,
    /// A heartbeat (no application data).
    pub heartbeat: bool,
}

/// Counters and live figures of an endpoint.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConnectionStats {
    /// Datagrams sent (data and heartbeats).
    pub datagrams_sent: u64,
    /// Heartbeats sent.
    pub heartbeats_sent: u64,
    /// Link bytes sent (datagrams plus link overhead).
    pub link_bytes_sent: u64,
    /// Application bytes sent.
    pub app_bytes_sent: u64,
    /// Application bytes received.
    pub app_bytes_received: u64,
    /// Datagrams that failed to parse (dropped, never fatal).
    pub malformed: u64,
    /// The receiver's counters.
    pub receiver: ReceiverStats,
}

/// What a datagram carries after its header.
enum Payload {
    /// This many zero bytes (a bulk sender's filler; 0 for a heartbeat).
    Filler(usize),
    /// An application datagram.
    Bytes(Vec<u8>),
}

/// One endpoint of a Sprout connection.
#[derive(Debug)]
pub struct Connection {
    config: Config,
    sender: Sender,
    receiver: Receiver,
    outgoing: VecDeque<Vec<u8>>,
    outgoing_bytes: usize,
    bulk: bool,
    incoming: VecDeque<Vec<u8>>,
    keep_incoming: bool,
    created_us: u64,
    last_feedback_sent: Option<u32>,
    stats: ConnectionStats,
}

impl Connection {
    /// A new endpoint created at `now_us`. Fails on an invalid configuration.
    pub fn new(config: Config, now_us: u64) -> Result<Self, String> {
        config.validate()?;
        let mut sender = Sender::new(&config);
        // Until the peer's first forecast arrives, work from what the prior alone forecasts
        // (the authors' "something reasonable"): a few packets, enough to start observing.
        let mut prior = vec![0u32; config.model.forecast_ticks.min(wire::MAX_FORECAST_TICKS)];
        crate::estimator::build(&config).forecast(&mut prior);
        sender.on_feedback(now_us, &wire::Feedback::new(0, 0, &prior));
        Ok(Connection {
            sender,
            receiver: Receiver::new(&config),
            config,
            outgoing: VecDeque::new(),
            outgoing_bytes: 0,
            bulk: false,
            incoming: VecDeque::new(),
            keep_incoming: true,
            created_us: now_us,
            last_feedback_sent: None,
            stats: ConnectionStats::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Queues an application datagram; it leaves when the window allows. Datagrams longer than
    /// [`Connection::max_payload`] are cut to that length.
    pub fn send(&mut self, mut datagram: Vec<u8>) {
        datagram.truncate(self.max_payload());
        self.outgoing_bytes += datagram.len();
        self.outgoing.push_back(datagram);
    }

    /// Bulk mode: the application always has more to send (the paper's saturating sender);
    /// each datagram is filled as far as the window and the datagram size allow.
    pub fn set_bulk(&mut self, bulk: bool) {
        self.bulk = bulk;
    }

    /// Whether received payloads are kept for [`Connection::recv`] (default) or only counted.
    pub fn set_keep_incoming(&mut self, keep: bool) {
        self.keep_incoming = keep;
    }

    /// Largest application payload per datagram, in bytes.
    pub fn max_payload(&self) -> usize {
        self.config.max_datagram_bytes - wire::header_bytes(self.config.model.forecast_ticks)
    }

    /// Application bytes waiting to be sent.
    pub fn queued_bytes(&self) -> usize {
        self.outgoing_bytes
    }

    /// The next received application datagram, if any.
    pub fn recv(&mut self) -> Option<Vec<u8>> {
        self.incoming.pop_front()
    }

    /// Takes in a datagram that arrived at `now_us`. A malformed datagram is counted and
    /// returned as an error; the connection is unaffected.
    pub fn handle_datagram(&mut self, now_us: u64, datagram: &[u8]) -> Result<(), WireError> {
        let d = match wire::decode(datagram) {
            Ok(d) => d,
            Err(e) => {
                self.stats.malformed += 1;
                return Err(e);
            }
        };
        let link_bytes = datagram.len() as u64 + self.config.link_overhead_bytes as u64;
        self.receiver.on_datagram(now_us, &d.header, link_bytes);
        if let Some(fb) = &d.header.feedback {
            self.sender.on_feedback(now_us, fb);
        }
        if !d.header.heartbeat && !d.payload.is_empty() {
            self.stats.app_bytes_received += d.payload.len() as u64;
            if self.keep_incoming {
                self.incoming.push_back(d.payload.to_vec());
            }
        }
        Ok(())
    }

    /// Runs the timers due by `now_us` (the receiver's ticks).
    pub fn handle_timeout(&mut self, now_us: u64) {
        self.receiver.on_timeout(now_us);
    }

    /// The next time the connection needs [`Connection::handle_timeout`] or may have something
    /// to send, in microseconds.
    pub fn poll_timeout(&mut self) -> Option<u64> {
        let mut next = self.heartbeat_due_us();
        if let Some(t) = self.receiver.next_tick_us() {
            next = next.min(t);
        }
        if self.has_data() {
            let last = self.sender.last_send_us().unwrap_or(self.created_us);
            if let Some(t) = self
                .sender
                .next_window_open_us(last, self.min_data_link_bytes())
            {
                next = next.min(t);
            }
        }
        Some(next)
    }

    fn heartbeat_due_us(&self) -> u64 {
        match self.sender.last_send_us() {
            Some(t) => t + self.config.heartbeat_interval_us,
            None => self.created_us,
        }
    }

    fn has_data(&self) -> bool {
        self.bulk || !self.outgoing.is_empty()
    }

    fn overhead(&self) -> u64 {
        self.config.link_overhead_bytes as u64
    }

    /// Link bytes of the smallest data datagram the application could send next (its header
    /// carries a forecast only if one is waiting to go out).
    fn min_data_link_bytes(&self) -> u64 {
        let header = if self.receiver.has_unsent_feedback(self.last_feedback_sent) {
            wire::header_bytes(self.config.model.forecast_ticks)
        } else {
            wire::FIXED_HEADER_BYTES
        } as u64;
        let payload = if self.bulk {
            1
        } else {
            self.outgoing.front().map_or(1, |d| d.len() as u64)
        };
        header + payload + self.overhead()
    }

    /// Writes the next datagram to send at `now_us` into `buf` (cleared first), or returns
    /// `None` if nothing should be sent now. Call repeatedly until `None`.
    pub fn poll_transmit(&mut self, now_us: u64, buf: &mut Vec<u8>) -> Option<Transmit> {
        self.receiver.on_timeout(now_us);
        // A forecast goes out once: on the first datagram after it was made (and on every
        // heartbeat, which costs nothing extra in datagrams).
        let feedback = self
            .receiver
            .feedback()
            .filter(|f| Some(f.forecast_id) != self.last_feedback_sent);
        let mut header = Header {
            seq: 0,
            throwaway: 0,
            time_to_next_us: 0,
            sent_us: now_us,
            heartbeat: false,
            feedback,
        };
        let header_len = header.encoded_len() as u64;
        let overhead = self.overhead();

        if self.has_data() {
            let window = self.sender.window_bytes(now_us);
            let room = window.saturating_sub(header_len + overhead);
            let payload_len = if self.bulk {
                Some(room.min(self.config.max_datagram_bytes as u64 - header_len))
                    .filter(|&n| n > 0)
            } else {
                self.outgoing
                    .front()
                    .map(|d| d.len() as u64)
                    .filter(|&n| header_len + n + overhead <= window)
            };
            if let Some(payload_len) = payload_len {
                let payload = if self.bulk {
                    Payload::Filler(payload_len as usize)
                } else {
                    let d = self.outgoing.pop_front().unwrap_or_default();
                    self.outgoing_bytes -= d.len();
                    Payload::Bytes(d)
                };
                return Some(self.emit(now_us, header, payload, buf));
            }
        }

        let feedback_due = match (self.config.feedback_interval_us, &header.feedback) {
            (Some(f), Some(_)) if !self.has_data() => {
                self.sender.last_send_us().is_none_or(|t| now_us >= t + f)
            }
            _ => false,
        };
        if now_us >= self.heartbeat_due_us() || feedback_due {
            header.heartbeat = true;
            if header.feedback.is_none() {
                header.feedback = self.receiver.feedback();
            }
            return Some(self.emit(now_us, header, Payload::Filler(0), buf));
        }
        None
    }

    /// Stamps `header` with the sender's numbers and time-to-next, counts the datagram, and
    /// writes it into `buf`.
    fn emit(
        &mut self,
        now_us: u64,
        mut header: Header,
        payload: Payload,
        buf: &mut Vec<u8>,
    ) -> Transmit {
        let app_bytes = match &payload {
            Payload::Filler(n) => *n,
            Payload::Bytes(d) => d.len(),
        };
        let link_bytes = (header.encoded_len() + app_bytes) as u64 + self.overhead();
        let (seq, throwaway) = self.sender.numbers(now_us);
        self.sender.on_sent(now_us, link_bytes);
        header.seq = seq;
        header.throwaway = throwaway;
        header.time_to_next_us = self.time_to_next(now_us);
        self.note_feedback(&header);
        buf.clear();
        header.encode(buf);
        match payload {
            Payload::Filler(n) => buf.resize(buf.len() + n, 0),
            Payload::Bytes(d) => buf.extend_from_slice(&d),
        }
        self.stats.datagrams_sent += 1;
        self.stats.link_bytes_sent += link_bytes;
        self.stats.app_bytes_sent += app_bytes as u64;
        if header.heartbeat {
            self.stats.heartbeats_sent += 1;
        }
        Transmit {
            len: buf.len(),
            app_bytes,
            heartbeat: header.heartbeat,
        }
    }

    fn note_feedback(&mut self, header: &Header) {
        if let Some(f) = &header.feedback {
            self.last_feedback_sent = Some(f.forecast_id);
        }
    }

    /// Time-to-next for a datagram being sent now (after its bytes were counted): 0 if another
    /// data datagram fits in the window right away (the flight goes on), else the heartbeat
    /// interval, the longest the sender will stay silent (as in the authors' sender).
    fn time_to_next(&mut self, now_us: u64) -> u32 {
        if self.has_data() && self.sender.window_bytes(now_us) >= self.min_data_link_bytes() {
            return 0;
        }
        self.config.heartbeat_interval_us.min(u32::MAX as u64) as u32
    }

    /// The current window, in link bytes.
    pub fn window_bytes(&mut self, now_us: u64) -> u64 {
        self.sender.window_bytes(now_us)
    }

    /// The sender's current queue estimate toward the peer, in link bytes.
    pub fn queue_estimate(&mut self, now_us: u64) -> u64 {
        self.sender.queue_estimate(now_us)
    }

    /// The forecast the sender is working from (cumulative packets per tick), if any.
    pub fn peer_forecast(&self) -> Option<&[u32]> {
        self.sender.forecast()
    }

    /// The receiver's current estimate of the incoming link rate, in packets/s.
    pub fn incoming_rate_pps(&self) -> f64 {
        self.receiver.rate_pps()
    }

    /// Counters.
    pub fn stats(&self) -> ConnectionStats {
        let mut s = self.stats.clone();
        s.receiver = self.receiver.stats();
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two endpoints over a perfect fixed-delay path; returns A's app bytes delivered to B.
    fn run_ideal(config: Config, ms: u64) -> (u64, ConnectionStats) {
        let mut a = Connection::new(config.clone(), 0).unwrap();
        let mut b = Connection::new(config, 0).unwrap();
        a.set_bulk(true);
        a.set_keep_incoming(false);
        b.set_keep_incoming(false);
        let mut in_flight: VecDeque<(u64, bool, Vec<u8>)> = VecDeque::new();
        let mut buf = Vec::new();
        for now in (0..ms * 1000).step_by(1000) {
            while let Some((t, _, _)) = in_flight.front() {
                if *t > now {
                    break;
                }
                let (_, to_b, d) = in_flight.pop_front().unwrap();
                if to_b {
                    b.handle_datagram(now, &d).unwrap();
                } else {
                    a.handle_datagram(now, &d).unwrap();
                }
            }
            a.handle_timeout(now);
            b.handle_timeout(now);
            while a.poll_transmit(now, &mut buf).is_some() {
                in_flight.push_back((now + 20_000, true, buf.clone()));
            }
            while b.poll_transmit(now, &mut buf).is_some() {
                in_flight.push_back((now + 20_000, false, buf.clone()));
            }
        }
        (b.stats().app_bytes_received, a.stats())
    }

    #[test]
    fn keeps_sending_on_a_fixed_delay_path() {
        // With no queue, the receiver only sees what the sender sends, so the cautious forecast
        // settles low; the point here is that data keeps flowing and never deadlocks.
        let (delivered, stats) = run_ideal(Config::default(), 2000);
        assert!(stats.datagrams_sent > stats.heartbeats_sent);
        assert!(delivered > 20_000, "only {delivered} bytes in 2 s");
    }

    #[test]
    fn malformed_input_is_counted_not_fatal() {
        let mut a = Connection::new(Config::default(), 0).unwrap();
        assert!(a.handle_datagram(0, b"garbage").is_err());
        assert!(a.handle_datagram(0, &[]).is_err());
        assert_eq!(a.stats().malformed, 2);
        let mut buf = Vec::new();
        assert!(a.poll_transmit(0, &mut buf).is_some());
    }

    #[test]
    fn invalid_config_is_rejected() {
        let c = Config {
            confidence: 1.5,
            ..Config::default()
        };
        assert!(Connection::new(c, 0).is_err());
    }
}

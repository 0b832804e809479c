//! The client's recording ([`ClientRun`]): hellos until the server answers, then both
//! directions at once (its sender of the uplink, its recorder of the downlink and their
//! feedback) until the duration passes or a stop signal comes.

use std::io;

use sprout_os::signals::SignalWatcher;

use crate::recorder::{Recorder, RecorderConfig};
use crate::runtime::error::SaturatorError;
use crate::runtime::options::ClientOptions;
use crate::runtime::output::{print_progress, DirProgress, Progress, Rate};
use crate::runtime::socket::{now_us, realtime_offset_ns, wait, Sock, BATCH, RECV_BUFFER_BYTES};
use crate::sender::Sender;
use crate::wire::{
    decode, encode, valid_name, AckInfo, Dir, Hello, Message, Mode, FLAG_FEEDBACK_PATH,
};

/// How long the client says hello before giving up, µs.
const HELLO_TIMEOUT_US: u64 = 10_000_000;
/// Hellos (and FINs) are repeated this often until answered, µs.
pub(crate) const REPEAT_US: u64 = 200_000;
/// A path still unanswered this long after the start is warned about, µs.
const WARN_AFTER_US: u64 = 5_000_000;

/// The client's sockets.
pub(crate) struct ClientEnd {
    pub(crate) data: Sock,
    pub(crate) fb: Option<Sock>,
    /// The server answered over the feedback path: feedback goes there (until then, and
    /// without one, over the data path).
    pub(crate) fb_ok: bool,
}

impl ClientEnd {
    /// The socket feedback goes over.
    pub(crate) fn feedback(&self) -> &Sock {
        self.fb
            .as_ref()
            .filter(|_| self.fb_ok)
            .unwrap_or(&self.data)
    }

    /// Whether feedback goes over the separate path.
    fn fb_path(&self) -> bool {
        self.fb.is_some() && self.fb_ok
    }

    pub(crate) fn socks(&self) -> Vec<&Sock> {
        let mut v = vec![&self.data];
        if let Some(f) = &self.fb {
            v.push(f);
        }
        v
    }
}

/// One recording of the client, from its first hello to the end of the duration.
pub(crate) struct ClientRun<'a> {
    o: &'a ClientOptions,
    pub(crate) end: ClientEnd,
    pub(crate) session: u64,
    payload: u32,
    /// The name the server may keep its copy under (the prefix's last component, if valid).
    base_name: String,
    pub(crate) start_us: u64,
    pub(crate) rec: Option<Recorder>,
    pub(crate) sender: Option<Sender>,
    data_acked: bool,
    out: Vec<u8>,
    buf: Vec<u8>,
    // The recording loop's bookkeeping.
    next_progress: u64,
    down_rate: Rate,
    up_rate: Rate,
    peer_window: u64,
    peer_rtt_ms: u64,
    last_data_send: u64,
    last_fb_send: u64,
    next_fb_hello: u64,
    next_data_hello: u64,
    warned_fb: bool,
    warned_data: bool,
}

impl<'a> ClientRun<'a> {
    /// Opens the sockets; the clock of the recording starts now.
    pub(crate) fn new(
        o: &'a ClientOptions,
        payload: u32,
        session: u64,
    ) -> Result<ClientRun<'a>, SaturatorError> {
        let base_name = o
            .name
            .file_name()
            .and_then(|n| n.to_str())
            .filter(|n| valid_name(n))
            .unwrap_or("")
            .to_string();
        let end = ClientEnd {
            data: Sock::connected(o.connect)?,
            fb: o.feedback.map(Sock::connected).transpose()?,
            fb_ok: false,
        };
        let start_us = now_us();
        let rec = o.direction.has(Dir::Down).then(|| {
            let cfg = RecorderConfig {
                payload_bytes: payload,
                line_bytes: o.mtu,
                ..RecorderConfig::default()
            };
            Recorder::new(cfg, session, Dir::Down, start_us)
        });
        Ok(ClientRun {
            o,
            end,
            session,
            payload,
            base_name,
            start_us,
            rec,
            sender: None,
            data_acked: false,
            out: Vec::with_capacity(RECV_BUFFER_BYTES),
            buf: vec![0u8; RECV_BUFFER_BYTES],
            next_progress: start_us + 1_000_000,
            down_rate: Rate::default(),
            up_rate: Rate::default(),
            peer_window: 0,
            peer_rtt_ms: 0,
            last_data_send: 0,
            last_fb_send: 0,
            next_fb_hello: 0,
            next_data_hello: 0,
            warned_fb: false,
            warned_data: false,
        })
    }

    fn hello(&self, feedback_path: bool) -> Hello {
        Hello {
            session: self.session,
            mode: self.o.direction,
            payload_bytes: self.payload,
            low_rtt_ms: self.o.low_rtt_ms,
            high_rtt_ms: self.o.high_rtt_ms,
            max_window: self.o.max_window,
            feedback_path,
            uses_feedback: self.o.feedback.is_some(),
            name: self.base_name.clone(),
        }
    }

    /// Sends a hello over the data path (and over the feedback path with `both`).
    fn send_hellos(&mut self, both: bool) {
        encode(&Message::Hello(self.hello(false)), 0, &mut self.out);
        let _ = self.end.data.send(&self.out);
        if both {
            if let Some(f) = &self.end.fb {
                encode(&Message::Hello(self.hello(true)), 0, &mut self.out);
                let _ = f.send(&self.out);
            }
        }
    }

    /// Hellos until the server answers on either path (it then knows the session); data
    /// that arrives meanwhile is recorded.
    pub(crate) fn handshake(&mut self, signals: &SignalWatcher) -> Result<(), SaturatorError> {
        let mut fb_acked = false;
        let mut next_hello = 0;
        let deadline = self.start_us + HELLO_TIMEOUT_US;
        let mut early_malformed = 0u64;
        loop {
            let now = now_us();
            if signals.take().is_some() {
                return Err(SaturatorError::InterruptedBeforeAnswer);
            }
            if now >= deadline {
                return Err(SaturatorError::NoAnswer(self.o.connect));
            }
            if now >= next_hello {
                self.send_hellos(true);
                next_hello = now + REPEAT_US;
            }
            let mut answered = false;
            for (i, s) in self.end.socks().into_iter().enumerate() {
                while let Some(r) = s.recv(&mut self.buf, realtime_offset_ns(), now)? {
                    match decode(&self.buf[..r.len.min(self.buf.len())]) {
                        Ok(Message::HelloAck { session, flags }) if session == self.session => {
                            if flags & FLAG_FEEDBACK_PATH != 0 || i == 1 {
                                fb_acked = true;
                            } else {
                                self.data_acked = true;
                            }
                            // Either path will do: the server knows the session. (Over the
                            // feedback path it answers first when the data path is slow to
                            // start, e.g. in an outage; the data path's hello follows.)
                            answered = true;
                        }
                        Ok(Message::Busy { session }) if session == self.session => {
                            return Err(SaturatorError::Busy(self.o.connect));
                        }
                        Ok(Message::Data(h)) => {
                            if let Some(rec) = self.rec.as_mut() {
                                rec.on_data(r.at_us, &h, r.len);
                            }
                        }
                        Ok(_) => {}
                        Err(_) => early_malformed += 1,
                    }
                }
            }
            if answered {
                self.end.fb_ok = fb_acked;
                break;
            }
            wait(&self.end.socks(), now + 20_000);
        }
        if let Some(rec) = self.rec.as_mut() {
            for _ in 0..early_malformed {
                rec.on_malformed();
            }
        }
        Ok(())
    }

    /// Prints what is being recorded (text only).
    pub(crate) fn announce(&self) {
        if self.o.json {
            return;
        }
        println!(
            "recording {} with {} (session {:016x}), feedback {}, {}",
            match self.o.direction {
                Mode::Both => "both directions",
                Mode::Up => "the uplink",
                Mode::Down => "the downlink",
            },
            self.o.connect,
            self.session,
            self.o
                .feedback
                .map_or("over the data path".to_string(), |f| format!("over {f}")),
            self.o.duration.map(|d| d.as_micros() as u64).map_or(
                "until Ctrl-C".to_string(),
                |d| format!("{:.0} s", d as f64 / 1e6)
            ),
        );
    }

    /// Records until the duration passes or a stop signal comes; the time it stopped (µs).
    pub(crate) fn record(&mut self, signals: &SignalWatcher) -> io::Result<u64> {
        self.sender = self
            .o
            .direction
            .has(Dir::Up)
            .then(|| Sender::new(self.o.sender_config(), self.session, Dir::Up, now_us()));
        let end_us = self
            .o
            .duration
            .map(|d| self.start_us.saturating_add(d.as_micros() as u64));
        let t = now_us();
        (self.last_data_send, self.last_fb_send, self.next_fb_hello) = (t, t, t);
        self.next_data_hello = t + REPEAT_US;
        loop {
            let now = now_us();
            if end_us.is_some_and(|e| now >= e) || signals.take().is_some() {
                break;
            }
            self.receive(now)?;
            let now = now_us();
            let mut pending_ack = self.rec.as_mut().and_then(|r| r.poll_ack(now));
            self.send_data(now, &mut pending_ack);
            self.send_feedback(now, pending_ack);
            self.keep_paths(now);
            if now >= self.next_progress {
                self.progress(now);
            }
            let mut until = self.next_progress;
            for t in [
                end_us,
                self.sender.as_ref().and_then(|s| s.next_timeout_us()),
                self.rec.as_ref().and_then(|r| r.next_ack_us()),
                Some(self.last_fb_send + 1_000_000),
            ]
            .into_iter()
            .flatten()
            {
                until = until.min(t);
            }
            wait(&self.end.socks(), until);
        }
        let stop_us = now_us();
        if let Some(r) = self.rec.as_mut() {
            r.finish(stop_us);
        }
        if let Some(s) = self.sender.as_mut() {
            s.stop();
        }
        Ok(stop_us)
    }

    /// Reads what waits on both sockets (at most [`BATCH`] each).
    fn receive(&mut self, now: u64) -> io::Result<()> {
        let mut fb_answered = false;
        let offset = realtime_offset_ns();
        for (i, s) in self.end.socks().into_iter().enumerate() {
            for _ in 0..BATCH {
                let Some(r) = s.recv(&mut self.buf, offset, now)? else {
                    break;
                };
                let Ok(msg) = decode(&self.buf[..r.len.min(self.buf.len())]) else {
                    if let Some(rec) = self.rec.as_mut() {
                        rec.on_malformed();
                    }
                    continue;
                };
                if msg.session() != self.session {
                    if let Some(rec) = self.rec.as_mut() {
                        rec.on_stray();
                    }
                    continue;
                }
                match msg {
                    Message::Data(h) => {
                        self.peer_window = u64::from(h.window);
                        self.peer_rtt_ms = u64::from(h.rtt_ms);
                        if let Some(rec) = self.rec.as_mut() {
                            rec.on_data(r.at_us, &h, r.len);
                        }
                        if let (Some(ack), Some(snd)) = (h.ack, self.sender.as_mut()) {
                            snd.on_ack(r.at_us, &ack);
                        }
                    }
                    Message::Ack {
                        dir: Dir::Up,
                        info: Some(ack),
                        ..
                    } => {
                        if let Some(snd) = self.sender.as_mut() {
                            snd.on_ack(r.at_us, &ack);
                        }
                    }
                    Message::HelloAck { flags, .. } => {
                        if i == 1 || flags & FLAG_FEEDBACK_PATH != 0 {
                            fb_answered = true;
                        } else {
                            self.data_acked = true;
                        }
                    }
                    _ => {}
                }
            }
        }
        if fb_answered {
            self.end.fb_ok = true;
        }
        Ok(())
    }

    /// Sends the uplink's data packets the sender allows (at most [`BATCH`]), piggybacking
    /// the pending ack when the feedback goes over the data path.
    fn send_data(&mut self, now: u64, pending_ack: &mut Option<AckInfo>) {
        let Some(snd) = self.sender.as_mut() else {
            return;
        };
        for _ in 0..BATCH {
            let Some(o) = snd.poll_transmit(now) else {
                break;
            };
            let piggy = if !self.end.fb_path() {
                pending_ack.take()
            } else {
                None
            };
            let h = snd.data_header(&o, piggy);
            encode(&Message::Data(h), self.payload as usize, &mut self.out);
            match self.end.data.send(&self.out) {
                Ok(()) => self.last_data_send = now,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    snd.unsend(&o);
                    if piggy.is_some() {
                        *pending_ack = piggy;
                    }
                    break;
                }
                Err(_) => {}
            }
        }
    }

    /// Sends the downlink's ack if one is pending, or a keepalive ack once a second.
    fn send_feedback(&mut self, now: u64, pending_ack: Option<AckInfo>) {
        let fb_path = self.end.fb_path();
        if pending_ack.is_none() && now < self.last_fb_send + 1_000_000 {
            return;
        }
        let info = pending_ack.or_else(|| self.rec.as_ref().and_then(|r| r.ack_info(now)));
        encode(
            &Message::Ack {
                session: self.session,
                dir: Dir::Down,
                feedback_path: fb_path,
                info,
            },
            0,
            &mut self.out,
        );
        if self.end.feedback().send(&self.out).is_ok() {
            self.last_fb_send = now;
            if !fb_path {
                self.last_data_send = now;
            }
        }
    }

    /// Keeps the data path's mappings alive, and says hello again over a path the server has
    /// not answered on yet (warning once after 5 s).
    fn keep_paths(&mut self, now: u64) {
        if self.end.fb_path() && now >= self.last_data_send + 5_000_000 {
            // Keep the data path's mappings (NAT) alive while nothing else goes up it.
            encode(
                &Message::Ack {
                    session: self.session,
                    dir: Dir::Down,
                    feedback_path: false,
                    info: None,
                },
                0,
                &mut self.out,
            );
            let _ = self.end.data.send(&self.out);
            self.last_data_send = now;
        }
        if !self.data_acked && now >= self.next_data_hello {
            if !self.warned_data && now >= self.start_us + WARN_AFTER_US {
                eprintln!(
                    "warning: no answer over the data path ({}) yet",
                    self.o.connect
                );
                self.warned_data = true;
            }
            self.send_hellos(false);
            self.next_data_hello = now + REPEAT_US;
        }
        if self.end.fb.is_some() && !self.end.fb_ok && now >= self.next_fb_hello {
            if !self.warned_fb && now >= self.start_us + WARN_AFTER_US {
                eprintln!(
                    "warning: no answer over the feedback path {} yet; the feedback goes over \
                     the data path meanwhile",
                    self.o.feedback.map_or(String::new(), |f| f.to_string())
                );
                self.warned_fb = true;
            }
            if let Some(f) = &self.end.fb {
                encode(&Message::Hello(self.hello(true)), 0, &mut self.out);
                let _ = f.send(&self.out);
            }
            self.next_fb_hello = now + REPEAT_US;
        }
    }

    /// The progress line of the second that just ended.
    fn progress(&mut self, now: u64) {
        let t_s = (now - self.start_us) / 1_000_000;
        self.next_progress = self.start_us + (t_s + 1) * 1_000_000;
        if self.o.quiet {
            return;
        }
        let mtu = self.o.mtu;
        let down = self.rec.as_ref().map(|r| {
            let c = r.counters();
            DirProgress {
                kbps: self.down_rate.kbps(c.packets, mtu),
                rtt_ms: self.peer_rtt_ms,
                window: self.peer_window,
                lost: c.lost,
                packets: c.packets,
            }
        });
        let up = self.sender.as_ref().map(|s| {
            let st = s.stats();
            DirProgress {
                kbps: self.up_rate.kbps(st.peer_received, mtu),
                rtt_ms: s.srtt_us().unwrap_or(0) / 1000,
                window: s.window(),
                lost: st.peer_lost,
                packets: st.peer_received,
            }
        });
        let p = Progress {
            kind: "progress",
            role: "client",
            t_s,
            down,
            up,
        };
        print_progress(&p, self.o.json);
    }
}

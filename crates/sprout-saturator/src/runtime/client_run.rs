//! The client's recording ([`ClientRun`]): hellos until the server answers (each path proves
//! its address by sending back the cookie of the server's challenge), then the directions
//! asked for (its sender of the uplink, its recorder of the downlink and their feedback) until
//! the duration passes or a stop signal comes. The downlink's arrivals reach
//! `NAME.down.partial` about once a second as they come.

use sprout_core::direction::{Direction, Load};
use std::io;

use sprout_os::signals::SignalWatcher;

use sprout_core::time::{Duration, Instant};

use crate::recorder::{Recorder, RecorderConfig};
use crate::runtime::error::SaturatorError;
use crate::runtime::options::ClientOptions;
use crate::runtime::output::{
    print_progress, with_suffix, DirProgress, PartialTrace, Progress, Rate,
};
use crate::runtime::socket::{
    monotonic_now, realtime_offset_ns, wait, Sock, BATCH, RECV_BUFFER_BYTES,
};
use crate::sender::Sender;
use crate::wire::{
    decode, encode, valid_name, AckInfo, Cookie, Hello, Message, Refusal, FLAG_FEEDBACK_PATH,
};

/// How long the client says hello before giving up.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);
/// Hellos (and FINs) are repeated this often until answered.
pub(crate) const REPEAT: Duration = Duration::from_millis(200);
/// A path still unanswered this long after the start is warned about.
const WARN_AFTER: Duration = Duration::from_secs(5);
/// A path the server sends nothing over for this long (at first; the gap doubles up to
/// [`MAX_REHELLO`]) gets a hello again, so that a new address (a NAT rebinding) is proven
/// again; only over paths that carry no data of this client.
const REHELLO: Duration = Duration::from_secs(3);
/// Longest gap between those hellos.
const MAX_REHELLO: Duration = Duration::from_secs(24);

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
    /// The directions recorded.
    pub(crate) mode: Load,
    /// The cookies of the server's challenges, per path (data, feedback).
    cookies: [Option<Cookie>; 2],
    /// When the server was last heard over each path, and when to say hello again if it
    /// stays silent (with the gap used).
    heard: [Instant; 2],
    /// When the server was last heard over any path, in any form (data, probes, acks,
    /// answers), on the arrival clock: where a recording whose end the server never
    /// acknowledges is cut ([`ClientRun::record`]'s rule).
    pub(crate) last_from_server: Instant,
    /// The server said the recording reached its bound (`--max-recording`), this long.
    pub(crate) server_limit: Option<Duration>,
    rehello: [Instant; 2],
    rehello_gap: [Duration; 2],
    /// The downlink's recording as it goes.
    pub(crate) partial: Option<PartialTrace>,
    /// The name the server may keep its copy under (the prefix's last component, if valid).
    base_name: String,
    pub(crate) start: Instant,
    pub(crate) rec: Option<Recorder>,
    pub(crate) sender: Option<Sender>,
    data_acked: bool,
    out: Vec<u8>,
    buf: Vec<u8>,
    // The recording loop's bookkeeping.
    next_progress: Instant,
    down_rate: Rate,
    up_rate: Rate,
    peer_window: u64,
    peer_rtt: Duration,
    last_data_send: Instant,
    last_fb_send: Instant,
    next_fb_hello: Instant,
    next_data_hello: Instant,
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
        let start = monotonic_now();
        let mode = o.mode();
        let rec = mode.carries(Direction::Down).then(|| {
            let cfg = RecorderConfig {
                payload_bytes: payload,
                line_bytes: o.mtu,
                ..RecorderConfig::default()
            };
            Recorder::new(cfg, session, Direction::Down, start)
        });
        Ok(ClientRun {
            o,
            end,
            session,
            payload,
            mode,
            cookies: [None, None],
            heard: [start; 2],
            last_from_server: start,
            server_limit: None,
            rehello: [start + REHELLO; 2],
            rehello_gap: [REHELLO; 2],
            partial: None,
            base_name,
            start,
            rec,
            sender: None,
            data_acked: false,
            out: Vec::with_capacity(RECV_BUFFER_BYTES),
            buf: vec![0u8; RECV_BUFFER_BYTES],
            next_progress: start + Duration::from_secs(1),
            down_rate: Rate::default(),
            up_rate: Rate::default(),
            peer_window: 0,
            peer_rtt: Duration::ZERO,
            last_data_send: Instant::ZERO,
            last_fb_send: Instant::ZERO,
            next_fb_hello: Instant::ZERO,
            next_data_hello: Instant::ZERO,
            warned_fb: false,
            warned_data: false,
        })
    }

    fn hello(&self, feedback_path: bool) -> Hello {
        let (low_rtt_ms, high_rtt_ms) = self.o.rtt_marks_ms();
        Hello {
            session: self.session,
            mode: self.mode,
            payload_bytes: self.payload,
            low_rtt_ms,
            high_rtt_ms,
            max_window: self.o.max_window,
            feedback_path,
            uses_feedback: self.o.feedback.is_some(),
            name: self.base_name.clone(),
            cookie: self.cookies[usize::from(feedback_path)],
        }
    }

    /// Sends a hello over one path (padded to the data packets' size, at least 1200 bytes),
    /// with the path's cookie once it has one.
    fn send_hello(&mut self, feedback_path: bool) {
        encode(
            &Message::Hello(self.hello(feedback_path)),
            self.payload as usize,
            &mut self.out,
        );
        let sock = if feedback_path {
            self.end.fb.as_ref()
        } else {
            Some(&self.end.data)
        };
        if let Some(s) = sock {
            let _ = s.send(&self.out);
        }
    }

    /// Sends a hello over the data path (and over the feedback path with `both`).
    fn send_hellos(&mut self, both: bool) {
        self.send_hello(false);
        if both && self.end.fb.is_some() {
            self.send_hello(true);
        }
    }

    /// A challenge of the server over path `i` (0: data, 1: feedback): says hello again at
    /// once with its cookie.
    fn on_challenge(&mut self, i: usize, cookie: Cookie) {
        self.cookies[i] = Some(cookie);
        self.send_hello(i == 1);
    }

    /// Starts the uplink's sender once the data path has its cookie (the hello carrying it
    /// reaches the server before the data behind it).
    fn start_sender(&mut self, now: Instant) {
        if self.sender.is_none()
            && self.mode.carries(Direction::Up)
            && (self.cookies[0].is_some() || self.data_acked)
        {
            self.sender = Some(Sender::new(
                self.o.sender_config(),
                self.session,
                Direction::Up,
                now,
            ));
        }
    }

    /// Hellos until the server answers on either path (it then knows the session); data
    /// that arrives meanwhile is recorded.
    pub(crate) fn handshake(&mut self, signals: &SignalWatcher) -> Result<(), SaturatorError> {
        let mut fb_acked = false;
        let mut next_hello = Instant::ZERO;
        let deadline = self.start + HELLO_TIMEOUT;
        let mut early_malformed = 0u64;
        loop {
            let now = monotonic_now();
            if signals.take().is_some() {
                return Err(SaturatorError::InterruptedBeforeAnswer);
            }
            if now >= deadline {
                return Err(SaturatorError::NoAnswer(self.o.connect));
            }
            if now >= next_hello {
                self.send_hellos(true);
                next_hello = now + REPEAT;
            }
            let mut answered = false;
            let mut challenges = Vec::new();
            for (i, s) in self.end.socks().into_iter().enumerate() {
                while let Some(r) = s.recv(&mut self.buf, realtime_offset_ns(), now)? {
                    match decode(&self.buf[..r.len.min(self.buf.len())]) {
                        Ok(Message::Challenge {
                            session, cookie, ..
                        }) if session == self.session => challenges.push((i, cookie)),
                        Ok(Message::Refused { session, reason }) if session == self.session => {
                            return Err(match reason {
                                Refusal::Busy { .. } => {
                                    SaturatorError::Busy(self.o.connect, reason.time())
                                }
                                _ => SaturatorError::Refused(self.o.connect, reason),
                            });
                        }
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
                            return Err(SaturatorError::Busy(self.o.connect, None));
                        }
                        Ok(Message::Data(h)) => {
                            if let Some(rec) = self.rec.as_mut() {
                                rec.on_data(r.at, &h, r.len);
                            }
                        }
                        Ok(_) => {}
                        Err(_) => early_malformed += 1,
                    }
                }
            }
            for (i, cookie) in challenges {
                self.on_challenge(i, cookie);
            }
            if answered {
                self.end.fb_ok = fb_acked;
                self.last_from_server = now;
                break;
            }
            wait(&self.end.socks(), now + Duration::from_millis(20));
        }
        if let Some(rec) = self.rec.as_mut() {
            for _ in 0..early_malformed {
                rec.on_malformed();
            }
        }
        if self.rec.is_some() {
            self.partial = Some(PartialTrace::create(with_suffix(
                &self.o.name,
                ".down.partial",
            ))?);
        }
        Ok(())
    }

    /// Prints what is being recorded (text only), and on stderr why one path records one
    /// direction (or, asked for both, why the recording will under-state the link).
    pub(crate) fn announce(&self) {
        if self.o.both_over_one_path() {
            eprintln!(
                "WARNING: saturating both directions over one path: the feedback (acks) of each \
                 direction queues behind the other direction's saturated data, so the \
                 recording misses opportunities (12-28% through the emulator). Record one \
                 direction at a time, or give --feedback a second path."
            );
        } else if self.o.direction.is_none() && self.o.feedback.is_none() {
            eprintln!(
                "note: recording the downlink only: without --feedback the acks would share \
                 the saturated path (record the uplink with --direction up, or both at once \
                 with --feedback over a second path)"
            );
        }
        if self.o.json {
            return;
        }
        println!(
            "recording {} with {} (session {:016x}), feedback {}, {}",
            match self.mode {
                Load::Both => "both directions",
                Load::Up => "the uplink",
                Load::Down => "the downlink",
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

    /// Records until the duration passes, a stop signal comes, or the server says the
    /// recording reached its bound; the time it stopped, and why ("duration", "interrupted",
    /// "server-limit").
    ///
    /// How a dead server is told from an outage of the link: a live server sends something
    /// over the session's paths many times a second while the link carries it (the
    /// downlink's data and probes, 5 a second even with the window full; the uplink's acks;
    /// answers to hellos), and it acknowledges the end of the recording (FIN-ACK). A silence
    /// after which the server is heard again was the link's (an outage, recorded as one);
    /// a silence that lasts through the end without the end acknowledged is the server's
    /// (it died, or ended the session after its idle timeout): the client cuts the recording
    /// where the server was last heard ([`ClientRun::last_from_server`]) and marks it
    /// incomplete, never an outage. An outage of the link that lasts to the end and through
    /// the FIN timeout cannot be told from a death, and is marked incomplete too.
    pub(crate) fn record(
        &mut self,
        signals: &SignalWatcher,
    ) -> Result<(Instant, &'static str), SaturatorError> {
        let end = self.o.duration.map(|d| self.start + Duration::from(d));
        let t = monotonic_now();
        (self.last_data_send, self.last_fb_send, self.next_fb_hello) = (t, t, t);
        self.next_data_hello = t + REPEAT;
        let why = loop {
            let now = monotonic_now();
            if end.is_some_and(|e| now >= e) {
                break "duration";
            }
            if signals.take().is_some() {
                break "interrupted";
            }
            if self.server_limit.is_some() {
                break "server-limit";
            }
            self.receive(now)?;
            let now = monotonic_now();
            self.start_sender(now);
            let mut pending_ack = self.rec.as_mut().and_then(|r| r.poll_ack(now));
            self.send_data(now, &mut pending_ack);
            self.send_feedback(now, pending_ack);
            self.keep_paths(now);
            if now >= self.next_progress {
                self.progress(now);
                if let (Some(p), Some(r)) = (self.partial.as_mut(), self.rec.as_ref()) {
                    p.append(r.arrivals_ms())?;
                }
            }
            let mut until = self.next_progress;
            for t in [
                end,
                self.sender.as_ref().and_then(|s| s.next_timeout()),
                self.rec.as_ref().and_then(|r| r.next_ack()),
                Some(self.last_fb_send + Duration::from_secs(1)),
            ]
            .into_iter()
            .flatten()
            {
                until = until.min(t);
            }
            wait(&self.end.socks(), until);
        };
        let stop = monotonic_now();
        if let Some(r) = self.rec.as_mut() {
            r.finish(stop);
        }
        if let Some(s) = self.sender.as_mut() {
            s.stop();
        }
        Ok((stop, why))
    }

    /// Reads what waits on both sockets (at most [`BATCH`] each).
    fn receive(&mut self, now: Instant) -> io::Result<()> {
        let mut fb_answered = false;
        let mut challenges = Vec::new();
        let mut heard = [false; 2];
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
                heard[i] = true;
                self.last_from_server = self.last_from_server.max(r.at);
                match msg {
                    Message::Challenge { cookie, .. } => challenges.push((i, cookie)),
                    Message::Refused {
                        reason: reason @ Refusal::Limit { .. },
                        ..
                    } => self.server_limit = reason.time(),
                    Message::Data(h) => {
                        self.peer_window = u64::from(h.window);
                        self.peer_rtt = Duration::from_millis(u64::from(h.rtt_ms));
                        if let Some(rec) = self.rec.as_mut() {
                            rec.on_data(r.at, &h, r.len);
                        }
                        if let (Some(ack), Some(snd)) = (h.ack, self.sender.as_mut()) {
                            snd.on_ack(r.at, &ack);
                        }
                    }
                    Message::Ack {
                        dir: Direction::Up,
                        info: Some(ack),
                        ..
                    } => {
                        if let Some(snd) = self.sender.as_mut() {
                            snd.on_ack(r.at, &ack);
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
        for (i, cookie) in challenges {
            self.on_challenge(i, cookie);
        }
        for (i, h) in heard.into_iter().enumerate() {
            if h {
                self.heard(i, now);
            }
        }
        Ok(())
    }

    /// The server was heard over path `i` at `now`: no hello again before a silence.
    fn heard(&mut self, i: usize, now: Instant) {
        self.heard[i] = now;
        self.rehello_gap[i] = REHELLO;
        self.rehello[i] = now + REHELLO;
    }

    /// Says hello again over a proven path the server has been silent on (a new address
    /// after a NAT rebinding needs a new cookie; an unchanged one is just acknowledged), with
    /// the gap doubling while the silence lasts. Not over the data path when it carries the
    /// uplink's data: the server challenges a new address's data hello itself, and a hello
    /// there would take an opportunity of the recording.
    fn rehello(&mut self, now: Instant) {
        for i in 0..2 {
            let carries_data = i == 0 && self.mode.carries(Direction::Up);
            let proven = if i == 0 {
                self.data_acked
            } else {
                self.end.fb_ok
            };
            if carries_data || !proven || now < self.rehello[i] {
                continue;
            }
            self.send_hello(i == 1);
            self.rehello_gap[i] = (self.rehello_gap[i] * 2).min(MAX_REHELLO);
            self.rehello[i] = now + self.rehello_gap[i];
        }
    }

    /// Sends the uplink's data packets the sender allows (at most [`BATCH`]), piggybacking
    /// the pending ack when the feedback goes over the data path.
    fn send_data(&mut self, now: Instant, pending_ack: &mut Option<AckInfo>) {
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
    fn send_feedback(&mut self, now: Instant, pending_ack: Option<AckInfo>) {
        let fb_path = self.end.fb_path();
        if pending_ack.is_none() && now < self.last_fb_send + Duration::from_secs(1) {
            return;
        }
        let info = pending_ack.or_else(|| self.rec.as_ref().and_then(|r| r.ack_info(now)));
        encode(
            &Message::Ack {
                session: self.session,
                dir: Direction::Down,
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
    fn keep_paths(&mut self, now: Instant) {
        self.rehello(now);
        if self.end.fb_path() && now >= self.last_data_send + Duration::from_secs(5) {
            // Keep the data path's mappings (NAT) alive while nothing else goes up it.
            encode(
                &Message::Ack {
                    session: self.session,
                    dir: Direction::Down,
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
            if !self.warned_data && now >= self.start + WARN_AFTER {
                eprintln!(
                    "warning: no answer over the data path ({}) yet",
                    self.o.connect
                );
                self.warned_data = true;
            }
            self.send_hellos(false);
            self.next_data_hello = now + REPEAT;
        }
        if self.end.fb.is_some() && !self.end.fb_ok && now >= self.next_fb_hello {
            if !self.warned_fb && now >= self.start + WARN_AFTER {
                eprintln!(
                    "warning: no answer over the feedback path {} yet; the feedback goes over \
                     the data path meanwhile",
                    self.o.feedback.map_or(String::new(), |f| f.to_string())
                );
                self.warned_fb = true;
            }
            self.send_hello(true);
            self.next_fb_hello = now + REPEAT;
        }
    }

    /// The progress line of the second that just ended.
    fn progress(&mut self, now: Instant) {
        let t_s = (now - self.start).as_micros() / 1_000_000;
        self.next_progress = self.start + Duration::from_secs(t_s + 1);
        if self.o.quiet {
            return;
        }
        let mtu = self.o.mtu;
        let down = self.rec.as_ref().map(|r| {
            let c = r.counters();
            DirProgress {
                kbps: self.down_rate.kbps(c.packets, mtu),
                rtt: self.peer_rtt,
                window: self.peer_window,
                lost: c.lost,
                packets: c.packets,
            }
        });
        let up = self.sender.as_ref().map(|s| {
            let st = s.stats();
            DirProgress {
                kbps: self.up_rate.kbps(st.peer_received, mtu),
                rtt: s.srtt().unwrap_or(Duration::ZERO),
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

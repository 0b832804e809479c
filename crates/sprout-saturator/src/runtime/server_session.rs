//! One recording on the server ([`Session`]): from the client's first hello to its DONE (or
//! silence), with the uplink's recorder, the downlink's sender, and the recording kept for
//! the client once it ended.

use sprout_core::direction::Direction;
use std::io;
use std::net::SocketAddr;

use sprout_core::time::{Duration, Instant};

use crate::recorder::{write_trace, Recorder, RecorderConfig};
use crate::runtime::error::SaturatorError;
use crate::runtime::options::{ip_udp_overhead, ServerOptions};
use crate::runtime::output::{
    print_progress, unused_prefix, with_suffix, write_file, write_json, DirProgress, Progress, Rate,
};
use crate::runtime::socket::{Received, Sock, BATCH};
use crate::sender::{Sender, SenderConfig};
use crate::transfer::{chunk, encode_result, result_meta};
use crate::wire::{encode, AckInfo, Hello, Message, Refusal, ResultMeta, CHUNK_BYTES};

/// Most chunks sent for one request (what the client asks for at once).
const MAX_CHUNKS_PER_REQUEST: u32 = 64;
/// The client of a recording the bound ended is told so again at most this often, while its
/// data or acks still come.
pub(crate) const LIMIT_NOTICE_GAP: Duration = Duration::from_millis(200);
/// What a refused client is told to add to the time left of the recording holding the server
/// (the end's FIN, the transfer of the uplink's recording, the DONE).
const RETRY_SLACK: Duration = Duration::from_secs(2);

/// The recording kept for the client once it ended: the encoded uplink recording, its
/// description, and when the client last asked for it (µs).
pub(crate) struct Finished {
    pub(crate) blob: Vec<u8>,
    pub(crate) meta: ResultMeta,
    pub(crate) since: Instant,
}

/// One recording on the server.
pub(crate) struct Session {
    pub(crate) hello: Hello,
    /// The client's address on the data path, once a hello with a valid cookie came from it
    /// (a hello over the feedback path does not tell it). Only it may send the uplink's data.
    pub(crate) data_addr: Option<SocketAddr>,
    /// The client's address on the feedback path, once proven likewise.
    pub(crate) fb_addr: Option<SocketAddr>,
    /// Datagrams from other addresses during the session: ignored, not in the recording.
    pub(crate) foreign: u64,
    /// The downlink's sender's configuration; the sender starts once the data path is known.
    sender_cfg: SenderConfig,
    pub(crate) start: Instant,
    /// Bytes a trace line stands for (the client's IP packet size).
    pub(crate) line_bytes: u32,
    pub(crate) rec: Option<Recorder>,
    pub(crate) sender: Option<Sender>,
    pub(crate) last_heard: Instant,
    /// The server's bound on this recording: it ends at `start` + `--max-recording`.
    pub(crate) bound_at: Instant,
    /// Once the bound ended the recording: when the client was last told so (a
    /// [`Refusal::Limit`], repeated at most every [`LIMIT_NOTICE_GAP`] while its data or acks
    /// still come).
    pub(crate) limit_notice: Option<Instant>,
    pub(crate) finished: Option<Finished>,
    pub(crate) done: bool,
    pub(crate) files: Vec<String>,
    // The per-second line's bookkeeping.
    pub(crate) next_progress: Instant,
    up_rate: Rate,
    down_rate: Rate,
    pub(crate) peer_window: u64,
    pub(crate) peer_rtt: Duration,
}

impl Session {
    /// The session a client's first hello with a valid cookie (received as `first`) asks
    /// for, ended by the server `max_recording` after it starts.
    pub(crate) fn new(hello: Hello, first: &Received, max_recording: Duration) -> Session {
        let start = first.at;
        let session = hello.session;
        let sender_cfg = SenderConfig::with(
            Duration::from_millis(u64::from(hello.low_rtt_ms)),
            Duration::from_millis(u64::from(hello.high_rtt_ms)),
            hello.max_window,
        );
        let line_bytes = hello.payload_bytes + ip_udp_overhead(&first.from);
        let mut s = Session {
            data_addr: None,
            fb_addr: None,
            foreign: 0,
            sender_cfg,
            start,
            line_bytes,
            rec: hello.mode.carries(Direction::Up).then(|| {
                let cfg = RecorderConfig {
                    payload_bytes: hello.payload_bytes,
                    line_bytes,
                    ..RecorderConfig::default()
                };
                Recorder::new(cfg, session, Direction::Up, start)
            }),
            sender: None,
            last_heard: start,
            bound_at: start + max_recording,
            limit_notice: None,
            finished: None,
            done: false,
            files: Vec::new(),
            next_progress: start + Duration::from_secs(1),
            up_rate: Rate::default(),
            down_rate: Rate::default(),
            peer_window: 0,
            peer_rtt: Duration::ZERO,
            hello,
        };
        if s.hello.feedback_path {
            // The first hello came over the feedback path: the data path is not known yet.
            s.fb_addr = Some(first.from);
        } else {
            s.data_path(first.from, start);
        }
        s
    }

    /// The data path's address is `from` from `now` on (proven by a cookie: it may change
    /// only so, after roaming or a NAT rebinding); the downlink's sender starts with the
    /// first.
    pub(crate) fn data_path(&mut self, from: SocketAddr, now: Instant) {
        self.data_addr = Some(from);
        if self.sender.is_none()
            && self.finished.is_none()
            && self.hello.mode.carries(Direction::Down)
        {
            self.sender = Some(Sender::new(
                self.sender_cfg,
                self.hello.session,
                Direction::Down,
                now,
            ));
        }
    }

    /// How long another client should wait before trying again, at `now`: the time left to
    /// the bound (nothing once the recording ended) and [`RETRY_SLACK`].
    pub(crate) fn retry_after(&self, now: Instant) -> Refusal {
        let base = if self.finished.is_some() {
            now
        } else {
            self.bound_at.max(now)
        };
        Refusal::busy(base + RETRY_SLACK - now)
    }

    /// Tells the client (over each of its proven paths) that the recording reached the
    /// server's bound and is over, at most every [`LIMIT_NOTICE_GAP`].
    pub(crate) fn notify_limit(&mut self, sock: &Sock, bound: Duration, now: Instant) {
        if self
            .limit_notice
            .is_some_and(|t| now < t + LIMIT_NOTICE_GAP)
        {
            return;
        }
        self.limit_notice = Some(now);
        let mut out = Vec::with_capacity(64);
        let refused = Message::Refused {
            session: self.hello.session,
            reason: Refusal::limit(bound),
        };
        encode(&refused, 0, &mut out);
        for to in [self.data_addr, self.fb_addr].into_iter().flatten() {
            let _ = sock.send_to(&out, to);
        }
    }

    /// Whether `from` is one of the session's proven addresses.
    pub(crate) fn is_path(&self, from: &SocketAddr) -> bool {
        self.data_addr.as_ref() == Some(from) || self.fb_addr.as_ref() == Some(from)
    }

    /// Sends the chunks `first..first + count` of the kept recording to `to` (at most
    /// [`MAX_CHUNKS_PER_REQUEST`]; the caller checked that `to` is a proven path).
    pub(crate) fn send_chunks(
        &mut self,
        sock: &Sock,
        first: u32,
        count: u32,
        to: SocketAddr,
        now: Instant,
    ) {
        let Some(f) = self.finished.as_mut() else {
            return;
        };
        f.since = now;
        let mut chunk_out = Vec::with_capacity(CHUNK_BYTES + 64);
        let last = first
            .saturating_add(count.min(MAX_CHUNKS_PER_REQUEST))
            .min(f.meta.chunks);
        for index in first..last {
            encode(
                &Message::ResultChunk {
                    meta: f.meta,
                    index,
                    data: chunk(&f.blob, index),
                },
                0,
                &mut chunk_out,
            );
            let _ = sock.send_to(&chunk_out, to);
        }
    }

    /// Sends the downlink's data packets the sender allows (at most [`BATCH`]), piggybacking
    /// the uplink's pending ack when there is no feedback path, then the ack itself if it is
    /// still pending.
    pub(crate) fn send(&mut self, sock: &Sock, now: Instant, out: &mut Vec<u8>) {
        let session = self.hello.session;
        let payload = self.hello.payload_bytes as usize;
        let fb_to = self.fb_addr.filter(|_| self.hello.uses_feedback);
        let mut pending_ack: Option<AckInfo> = self.rec.as_mut().and_then(|r| r.poll_ack(now));
        if let (Some(snd), Some(data_addr)) = (self.sender.as_mut(), self.data_addr) {
            for _ in 0..BATCH {
                let Some(o) = snd.poll_transmit(now) else {
                    break;
                };
                let piggy = if fb_to.is_none() {
                    pending_ack.take()
                } else {
                    None
                };
                let h = snd.data_header(&o, piggy);
                encode(&Message::Data(h), payload, out);
                match sock.send_to(out, data_addr) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        snd.unsend(&o);
                        if piggy.is_some() {
                            pending_ack = piggy;
                        }
                        break;
                    }
                    Err(_) => {}
                }
            }
        }
        if let (Some(info), Some(to)) = (pending_ack, fb_to.or(self.data_addr)) {
            encode(
                &Message::Ack {
                    session,
                    dir: Direction::Up,
                    feedback_path: fb_to.is_some(),
                    info: Some(info),
                },
                0,
                out,
            );
            let _ = sock.send_to(out, to);
        }
    }

    /// The progress line of the second that just ended.
    pub(crate) fn progress(&mut self, now: Instant, o: &ServerOptions) {
        let t_s = (now - self.start).as_micros() / 1_000_000;
        self.next_progress = self.start + Duration::from_secs(t_s + 1);
        if o.quiet {
            return;
        }
        let line_bytes = self.line_bytes;
        let up = self.rec.as_ref().map(|r| {
            let c = r.counters();
            DirProgress {
                kbps: self.up_rate.kbps(c.packets, line_bytes),
                rtt: self.peer_rtt,
                window: self.peer_window,
                lost: c.lost,
                packets: c.packets,
            }
        });
        let down = self.sender.as_ref().map(|snd| {
            let st = snd.stats();
            DirProgress {
                kbps: self.down_rate.kbps(st.peer_received, line_bytes),
                rtt: snd.srtt().unwrap_or(Duration::ZERO),
                window: snd.window(),
                lost: st.peer_lost,
                packets: st.peer_received,
            }
        });
        let p = Progress {
            kind: "progress",
            role: "server",
            t_s,
            down,
            up,
        };
        print_progress(&p, o.json);
    }

    /// Ends the recording at `end` (now, or when the client was last heard): stops the
    /// downlink, encodes the uplink's recording for the client and writes it under `o.out` if
    /// asked, under a name no earlier recording has (each file whole or not at all).
    pub(crate) fn finish(&mut self, o: &ServerOptions, end: Instant) -> Result<(), SaturatorError> {
        if let Some(snd) = self.sender.as_mut() {
            snd.stop();
        }
        let blob = match self.rec.as_mut() {
            Some(rec) => {
                rec.finish(end);
                let summary = rec.summary(end);
                let sorted = rec.sorted_arrivals_ms();
                if let Some(dir) = &o.out {
                    let name = if self.hello.name.is_empty() {
                        format!("saturator-{:016x}", self.hello.session)
                    } else {
                        self.hello.name.clone()
                    };
                    let prefix =
                        unused_prefix(dir, &name, self.hello.session, &[".up", ".up.json"]);
                    let trace = with_suffix(&prefix, ".up");
                    write_file(&trace, |w| write_trace(&sorted, w))?;
                    let json = with_suffix(&prefix, ".up.json");
                    write_json(&json, &summary)?;
                    self.files.push(trace.display().to_string());
                    self.files.push(json.display().to_string());
                }
                encode_result(&summary, &sorted)
            }
            None => Vec::new(),
        };
        let meta = result_meta(self.hello.session, &blob);
        self.finished = Some(Finished {
            blob,
            meta,
            since: end,
        });
        Ok(())
    }
}

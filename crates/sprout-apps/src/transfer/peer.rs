//! The two halves of a session's data phase that run on threads: the receiving thread (a
//! [`Listener`] filling an [`Inbox`]) and the data sender (bulk or paced), over a client's
//! endpoint or a server's session alike ([`Peer`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use sprout_net::message::{Bye, Data, Hello, Message, Mode, DATA_HEADER_BYTES};
use sprout_net::{realtime_us, BulkWriter, Endpoint, EndpointStats, Session};

use crate::transfer::limits::{LISTEN_POLL, PACED_PAYLOAD};

/// What `run_session` needs of a client endpoint or a server's session.
pub(crate) trait Peer: Send + Sync + 'static {
    fn send(&self, d: Vec<u8>);
    fn set_bulk(&self, bulk: bool);
    fn set_bulk_writer(&self, write: BulkWriter);
    fn max_payload(&self) -> usize;
    fn recv_timeout(&self, t: Duration) -> Option<Vec<u8>>;
    fn wait_writable(&self, threshold: usize, t: Duration) -> bool;
    fn stats(&self) -> EndpointStats;
}

impl Peer for Endpoint {
    fn send(&self, d: Vec<u8>) {
        Endpoint::send(self, d)
    }
    fn set_bulk(&self, bulk: bool) {
        Endpoint::set_bulk(self, bulk)
    }
    fn set_bulk_writer(&self, write: BulkWriter) {
        Endpoint::set_bulk_writer(self, write)
    }
    fn max_payload(&self) -> usize {
        Endpoint::max_payload(self)
    }
    fn recv_timeout(&self, t: Duration) -> Option<Vec<u8>> {
        Endpoint::recv_timeout(self, t)
    }
    fn wait_writable(&self, threshold: usize, t: Duration) -> bool {
        Endpoint::wait_writable(self, threshold, t)
    }
    fn stats(&self) -> EndpointStats {
        Endpoint::stats(self)
    }
}

impl Peer for Session {
    fn send(&self, d: Vec<u8>) {
        Session::send(self, d)
    }
    fn set_bulk(&self, bulk: bool) {
        Session::set_bulk(self, bulk)
    }
    fn set_bulk_writer(&self, write: BulkWriter) {
        Session::set_bulk_writer(self, write)
    }
    fn max_payload(&self) -> usize {
        Session::max_payload(self)
    }
    fn recv_timeout(&self, t: Duration) -> Option<Vec<u8>> {
        Session::recv_timeout(self, t)
    }
    fn wait_writable(&self, threshold: usize, t: Duration) -> bool {
        Session::wait_writable(self, threshold, t)
    }
    fn stats(&self) -> EndpointStats {
        Session::stats(self)
    }
}

/// What the receiving thread has seen.
#[derive(Default)]
pub(crate) struct Inbox {
    pub(crate) accepted: bool,
    pub(crate) bye: Option<Bye>,
    /// One-way delays of DATA received this second, ms.
    pub(crate) second_delays: Vec<f64>,
    /// One-way delays of all DATA received, ms.
    pub(crate) delays: Vec<f32>,
    pub(crate) data_received: u64,
    /// Payload bytes of all DATA received.
    pub(crate) data_bytes: u64,
    /// The highest DATA sequence number received.
    pub(crate) max_seq: Option<u64>,
    pub(crate) bad_messages: u64,
    /// The receiving thread has read everything of an endpoint that ended, and stopped.
    pub(crate) drained: bool,
}

/// The receiving thread: parses every application payload into the inbox.
pub(crate) struct Listener {
    shared: Arc<InboxShared>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// The inbox and the signal of its news (the peer's ACCEPT or BYE).
#[derive(Default)]
struct InboxShared {
    inbox: Mutex<Inbox>,
    /// Signalled when an ACCEPT or a BYE arrives, and when the receiving thread ends.
    news: Condvar,
}

impl Listener {
    /// Starts reading `ep`. The thread blocks in `recv_timeout` (a datagram wakes it at
    /// once), checking its stop flag every [`LISTEN_POLL`], and ends by itself once `ep` has
    /// ended and nothing is left to read.
    pub(crate) fn start(ep: Arc<dyn Peer>) -> Listener {
        let shared = Arc::new(InboxShared::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (shared2, stop2) = (shared.clone(), stop.clone());
        let thread = thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                let asked = Instant::now();
                let Some(d) = ep.recv_timeout(LISTEN_POLL) else {
                    // `recv_timeout` returns None before its timeout only when the peer has
                    // ended (and everything received was read): nothing more will come.
                    if asked.elapsed() < LISTEN_POLL {
                        break;
                    }
                    continue;
                };
                let now = realtime_us();
                let mut ib = shared2.inbox.lock().unwrap_or_else(|e| e.into_inner());
                match Message::decode(&d) {
                    Ok(Message::Data(m)) => {
                        let owd_ms = (now as i64 - m.sent_us as i64) as f64 / 1000.0;
                        ib.second_delays.push(owd_ms);
                        ib.delays.push(owd_ms as f32);
                        ib.data_received += 1;
                        ib.data_bytes += d.len() as u64;
                        ib.max_seq = Some(ib.max_seq.map_or(m.seq, |s| s.max(m.seq)));
                        if !ib.accepted {
                            ib.accepted = true;
                            shared2.news.notify_all();
                        }
                    }
                    Ok(Message::Filler) => {}
                    // The HELLO travels in the handshake; one sent as data is ignored.
                    Ok(Message::Hello(_)) => {}
                    Ok(Message::Accept(_)) => {
                        ib.accepted = true;
                        shared2.news.notify_all();
                    }
                    Ok(Message::Bye(b)) => {
                        ib.bye = Some(b);
                        shared2.news.notify_all();
                    }
                    Err(_) => ib.bad_messages += 1,
                }
            }
            shared2
                .inbox
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .drained = true;
            shared2.news.notify_all();
        });
        Listener {
            shared,
            stop,
            thread: Some(thread),
        }
    }

    pub(crate) fn inbox(&self) -> std::sync::MutexGuard<'_, Inbox> {
        self.shared.inbox.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits at most `timeout` until `cond` holds of the inbox (an ACCEPT or a BYE wakes the
    /// wait); returns whether it holds.
    pub(crate) fn wait_until(&self, timeout: Duration, cond: impl Fn(&Inbox) -> bool) -> bool {
        let guard = self.inbox();
        let (guard, _) = self
            .shared
            .news
            .wait_timeout_while(guard, timeout, |ib| !cond(ib))
            .unwrap_or_else(|e| e.into_inner());
        cond(&guard)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The data sender of one side: bulk (stamped filler) or a paced thread.
pub(crate) struct DataSender {
    sent: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl DataSender {
    pub(crate) fn start(ep: &Arc<dyn Peer>, hello: &Hello) -> DataSender {
        let sent = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = match hello.mode {
            Mode::Bulk => {
                let counter = sent.clone();
                ep.set_bulk_writer(Box::new(move |buf: &mut [u8]| {
                    let seq = counter.load(Ordering::Relaxed);
                    let m = Data {
                        seq,
                        sent_us: realtime_us(),
                    };
                    if m.write(buf) {
                        counter.store(seq + 1, Ordering::Relaxed);
                    }
                }));
                None
            }
            Mode::Paced => {
                let size = match hello.payload_bytes {
                    0 => PACED_PAYLOAD,
                    n => n as usize,
                }
                .clamp(DATA_HEADER_BYTES, ep.max_payload());
                let interval =
                    Duration::from_secs_f64(size as f64 * 8.0 / (hello.rate_kbps as f64 * 1000.0));
                let (ep, counter, stop) = (ep.clone(), sent.clone(), stop.clone());
                Some(thread::spawn(move || {
                    let start = Instant::now();
                    let mut next = start;
                    let mut seq = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let now = Instant::now();
                        if now < next {
                            thread::sleep((next - now).min(Duration::from_millis(50)));
                            continue;
                        }
                        // Stamped as the application creates it: when the window holds it
                        // back it waits in the connection's send queue (which keeps every
                        // datagram, in order), and that wait counts in its delay.
                        let m = Data {
                            seq,
                            sent_us: realtime_us(),
                        };
                        ep.send(m.encode(size));
                        seq += 1;
                        counter.store(seq, Ordering::Relaxed);
                        next += interval;
                        // After a long stall, do not burst to catch up more than a second.
                        if now > next + Duration::from_secs(1) {
                            next = now;
                        }
                    }
                }))
            }
        };
        DataSender { sent, stop, thread }
    }

    /// Stops sending; returns the DATA messages sent.
    pub(crate) fn stop(mut self, ep: &dyn Peer) -> u64 {
        ep.set_bulk(false);
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.sent.load(Ordering::Relaxed)
    }
}

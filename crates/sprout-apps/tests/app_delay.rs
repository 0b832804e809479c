//! The application-level delay in the runtimes' summaries: a paced Sprout stream offered faster
//! than a slow link carries is scored from each datagram's creation, wherever it waits (the
//! sender's queue or the link's) and with what never arrives infinitely late; the interactive
//! stream counts its packets from the rate and duration.

use std::collections::VecDeque;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use sprout_apps::app_delay::paced_count;
use sprout_apps::interactive::{self, InteractiveClientOptions, InteractiveServerOptions};
use sprout_apps::transfer::{self, ClientOptions, ServerOptions};
use sprout_core::direction::Load;
use sprout_net::secure::PrivateKey;

/// A UDP relay between a client and `server`: the client's datagrams go straight on; the
/// server's wait in a drop-tail queue of `queue` datagrams that drains at `kbps`.
struct Relay {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Relay {
    fn start(server: SocketAddr, kbps: f64, queue: usize) -> Relay {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(1)))
            .unwrap();
        let addr = sock.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let thread = thread::spawn(move || {
            let mut client: Option<SocketAddr> = None;
            let mut down: VecDeque<Vec<u8>> = VecDeque::new();
            let mut busy_until = Instant::now();
            let mut buf = vec![0u8; 65_536];
            while !stop2.load(Ordering::Relaxed) {
                if let Ok((n, from)) = sock.recv_from(&mut buf) {
                    if from == server {
                        if down.len() < queue {
                            down.push_back(buf[..n].to_vec());
                        }
                    } else {
                        client = Some(from);
                        let _ = sock.send_to(&buf[..n], server);
                    }
                }
                let now = Instant::now();
                if let (Some(c), true) = (client, now >= busy_until) {
                    if let Some(d) = down.pop_front() {
                        let _ = sock.send_to(&d, c);
                        let tx = Duration::from_secs_f64(d.len() as f64 * 8.0 / (kbps * 1000.0));
                        busy_until = busy_until.max(now) + tx;
                    }
                }
            }
        });
        Relay {
            addr,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A free UDP port on 127.0.0.1.
fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn a_paced_stream_faster_than_the_link_is_scored_from_creation() {
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("server.key");
    let key = PrivateKey::generate();
    key.write_file(&key_file).unwrap();
    let server_addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let srv = ServerOptions {
        listen: server_addr.to_string(),
        key: Some(key_file),
        allow_any_client: true,
        once: true,
        json: true,
        ..ServerOptions::default()
    };
    let server = thread::spawn(move || transfer::serve(&srv));
    thread::sleep(Duration::from_millis(300));
    // 400 kbit/s offered down a 200 kbit/s link that drops nothing: what is not delivered by
    // the end waits in the sender's queue or the link's, and counts as never delivered.
    let relay = Relay::start(server_addr, 200.0, usize::MAX);
    let cli = ClientOptions {
        direction: Load::Down,
        rate: Some(400.0),
        duration: 4.0,
        json: true,
        ..ClientOptions::new(relay.addr.to_string(), key.public_key().to_base64())
    };
    let app = transfer::run_stream(&cli)
        .unwrap()
        .expect("a paced stream down");
    drop(relay);
    let _ = server.join();
    assert_eq!(app.app_clock, "CLOCK_REALTIME");
    let nominal = paced_count(4.0, 400.0, 1000);
    assert!(
        app.app_offered >= nominal * 9 / 10 && app.app_offered <= nominal * 11 / 10,
        "{app:?} (nominal {nominal})"
    );
    assert!(
        app.app_delivered >= 20 && app.app_delivered_kbps < 0.7 * app.app_offered_kbps,
        "{app:?}"
    );
    // Over 30% never delivered: the 95th percentile is infinite.
    assert_eq!(app.app_delay_p95_ms, None, "{app:?}");
    // Half the offered rate gets through: a queue (the sender's or the link's) grows by about
    // 25 datagrams a second, so the datagrams delivered after the first second waited long.
    let later_than_300 = app.app_delivered as f64 - app.app_within_300ms * app.app_offered as f64;
    assert!(later_than_300 >= 10.0, "{later_than_300} late: {app:?}");
    assert!(app.app_within_100ms <= app.app_within_150ms);
    assert!(app.app_within_150ms <= app.app_within_300ms);
}

#[test]
fn the_interactive_stream_scores_what_the_peer_created() {
    let port = free_port();
    let listen: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let stream = interactive::StreamOptions {
        rate_kbps: 400.0,
        payload_bytes: 500,
        duration: Some(1.0),
        linger: 0.3,
        json: true,
        ..interactive::StreamOptions::default()
    };
    let srv = InteractiveServerOptions {
        listen,
        stream: stream.clone(),
    };
    let server = thread::spawn(move || interactive::serve(&srv));
    thread::sleep(Duration::from_millis(200));
    let c = interactive::run(&InteractiveClientOptions {
        connect: listen,
        stream,
    })
    .unwrap();
    let s = server.join().unwrap().unwrap();
    // 500-byte packets at 400 kbit/s: one every 10 ms, 100 in the second.
    let nominal = paced_count(1.0, 400.0, 500);
    assert_eq!(nominal, 100);
    assert_eq!(c.app.app_clock, "CLOCK_MONOTONIC");
    assert_eq!(c.app.app_delivered, c.received_packets);
    assert!(
        c.app.app_offered >= nominal && c.app.app_offered <= s.sent_packets.max(nominal),
        "{:?} server sent {}",
        c.app,
        s.sent_packets
    );
    // Loopback loses nothing: every packet the server sent arrives within 100 ms.
    assert!(c.app.app_within_100ms >= 0.97, "{:?}", c.app);
    assert!(
        c.app.app_delay_p95_ms.is_some_and(|p| p < 50.0),
        "{:?}",
        c.app
    );
    assert!(
        (c.app.app_offered_kbps - 400.0).abs() <= 20.0,
        "{:?}",
        c.app
    );
}

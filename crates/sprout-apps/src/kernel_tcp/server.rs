//! `sprout tcp server`: accepts clients and runs the transfers they ask for.

use std::io::{self, BufRead, BufReader, Read};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use sprout_core::error_chain::chain_message;

use crate::kernel_tcp::error::TcpError;
use crate::kernel_tcp::options::TcpServerOptions;
use crate::kernel_tcp::request::Request;
use crate::kernel_tcp::transfer::{drain, report, send_bulk, set_congestion, Counters};

/// A request line longer than this is refused (bytes).
const MAX_REQUEST: usize = 128;

/// Serves one connection: reads its request, then sends or drains.
fn serve_connection(stream: TcpStream, counters: &Counters) -> Result<Request, TcpError> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    (&mut reader)
        .take(MAX_REQUEST as u64)
        .read_line(&mut line)
        .map_err(TcpError::ReadRequest)?;
    let req = Request::parse(line.trim_end())?;
    if req.up {
        stream.set_read_timeout(Some(Duration::from_millis(200)))?;
        // Grace for data still queued in the emulated link when the client stops.
        let deadline = Instant::now() + Duration::from_secs_f64(req.seconds + 30.0);
        drain(reader, &counters.received, deadline);
    } else {
        set_congestion(&stream, &req.cc)?;
        send_bulk(stream, req.seconds, &counters.sent);
    }
    Ok(req)
}

/// Runs `sprout tcp server`: serves clients until killed (or, with `once`, until the first
/// client's transfers are over), printing a line per second and a summary on stdout.
pub fn serve(o: &TcpServerOptions) -> Result<(), TcpError> {
    let (listen, once, json) = (o.listen, o.once, o.json);
    let listener = TcpListener::bind(listen).map_err(|source| TcpError::Listen {
        addr: listen,
        source,
    })?;
    eprintln!("sprout tcp server listening on {}", listener.local_addr()?);
    let counters = Arc::new(Counters::default());
    let done = Arc::new(AtomicBool::new(false));
    let reporter = {
        let (counters, done) = (counters.clone(), done.clone());
        thread::spawn(move || report("server", "-", &counters, &done, json))
    };
    let mut workers: Vec<thread::JoinHandle<()>> = Vec::new();
    // With --once: serve the connections of one client (those from its address that arrive
    // within a second of each other), then exit when they are over.
    let mut first_peer: Option<std::net::IpAddr> = None;
    if once {
        listener.set_nonblocking(true)?;
    }
    let mut idle_since = Instant::now();
    loop {
        match listener.accept() {
            Ok((stream, peer)) => {
                stream.set_nonblocking(false)?;
                idle_since = Instant::now();
                if once && first_peer.is_some_and(|p| p != peer.ip()) {
                    eprintln!("ignoring {peer}: serving one client only (--once)");
                    continue;
                }
                first_peer = Some(peer.ip());
                let counters = counters.clone();
                workers.push(thread::spawn(move || {
                    if let Err(e) = serve_connection(stream, &counters) {
                        eprintln!("client {peer}: {}", chain_message(&e));
                    }
                }));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if first_peer.is_some() && idle_since.elapsed() > Duration::from_secs(1) {
                    break;
                }
                thread::sleep(Duration::from_millis(10));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => eprintln!("accept: {e}"),
        }
        workers.retain(|w| !w.is_finished());
    }
    for w in workers {
        let _ = w.join();
    }
    done.store(true, Ordering::Relaxed);
    let _ = reporter.join();
    Ok(())
}

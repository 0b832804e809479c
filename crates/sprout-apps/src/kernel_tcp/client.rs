//! `sprout tcp client`: one bulk transfer per loaded direction with a server.

use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use sprout_core::direction::Direction;

use crate::kernel_tcp::error::TcpError;
use crate::kernel_tcp::options::TcpClientOptions;
use crate::kernel_tcp::request::{check_cc_name, Request};
use crate::kernel_tcp::transfer::{drain, report, send_bulk, set_congestion, Counters};

/// Runs `sprout tcp client`: the transfers, a line per second and a summary on stdout.
pub fn run(o: &TcpClientOptions) -> Result<(), TcpError> {
    let (connect, cc, direction, seconds, json) =
        (o.connect, o.cc.as_str(), o.direction, o.duration, o.json);
    check_cc_name(cc)?;
    if !(seconds.is_finite() && seconds > 0.0 && seconds <= 86_400.0) {
        return Err(TcpError::Duration(seconds));
    }
    let counters = Arc::new(Counters::default());
    let mut workers = Vec::new();
    for dir in Direction::BOTH
        .into_iter()
        .filter(|&d| direction.carries(d))
    {
        let up = dir == Direction::Up;
        let mut stream =
            TcpStream::connect_timeout(&connect, Duration::from_secs(10)).map_err(|source| {
                TcpError::Connect {
                    addr: connect,
                    source,
                }
            })?;
        if up {
            set_congestion(&stream, cc)?;
        }
        let req = Request {
            up,
            cc: cc.to_string(),
            seconds,
        };
        stream.write_all(req.line().as_bytes())?;
        let counters = counters.clone();
        workers.push(thread::spawn(move || {
            if up {
                send_bulk(stream, seconds, &counters.sent);
            } else {
                let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
                let deadline = Instant::now() + Duration::from_secs_f64(seconds + 30.0);
                drain(stream, &counters.received, deadline);
            }
        }));
    }
    let done = Arc::new(AtomicBool::new(false));
    let reporter = {
        let (counters, done, cc) = (counters.clone(), done.clone(), cc.to_string());
        thread::spawn(move || report("client", &cc, &counters, &done, json))
    };
    for w in workers {
        let _ = w.join();
    }
    done.store(true, Ordering::Relaxed);
    let _ = reporter.join();
    Ok(())
}

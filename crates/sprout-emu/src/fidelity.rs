//! Measurements of the emulator's own fidelity: how much of a link's capacity a saturating
//! flood gets through, and how much delay the emulator adds to a light probe beyond what the
//! link model prescribes. Used by the `fidelity` test and by `sprout link --fidelity`.
//!
//! Both run a UDP sender on a thread inside the mobile namespace and a receiver on a thread
//! outside, over a constant-rate trace (12 Mbit/s = one 1500-byte opportunity per ms).

use std::fmt;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sprout_link::{constant_rate_trace, LinkConfig, MmLog};
use sprout_os::clock::monotonic_ns;

use crate::emulator::{EmuError, Emulator, EmulatorConfig};
use crate::stats::Histogram;

/// UDP payload of a flood packet (bytes): with the 28 bytes of IPv4 and UDP headers, IP
/// packets of 1500 bytes, one trace opportunity each.
pub const FLOOD_PAYLOAD_BYTES: usize = 1472;

/// UDP payload of a probe packet (bytes): sequence number and send time, padded.
pub const PROBE_PAYLOAD_BYTES: usize = 64;

/// IPv4 + UDP header bytes.
const HEADERS_BYTES: usize = 28;

/// The flood is paced at this multiple of the link's capacity (it saturates the link and keeps
/// a standing queue without flooding the machine).
const FLOOD_PACE: f64 = 1.1;

fn io_err(what: &str) -> impl FnOnce(std::io::Error) -> EmuError + '_ {
    move |source| EmuError::Io {
        what: what.to_string(),
        source,
    }
}

/// Result of [`flood`].
#[derive(Debug, Clone)]
pub struct FloodResult {
    /// Link rate (Mbit/s).
    pub rate_mbit: f64,
    /// Start of the measured window (s after time 0).
    pub window_start_s: f64,
    /// Length of the measured window (s).
    pub window_s: f64,
    /// Bytes the trace's opportunities offered in the window (from the uplink log).
    pub offered_bytes: u64,
    /// Bytes the link model delivered in the window (from the uplink log).
    pub delivered_bytes: u64,
    /// IP bytes the receiver outside got in the window (UDP payload + 28).
    pub received_bytes: u64,
    /// Packets the sender handed to its socket over the whole run.
    pub sent_packets: u64,
    /// The emulator's lateness writing uplink packets (µs): see
    /// [`DirectionReport::lateness_us`](crate::DirectionReport::lateness_us).
    pub lateness_us: Histogram,
}

impl FloodResult {
    /// The model's utilization in the window: delivered / offered (from the log).
    pub fn model_utilization(&self) -> f64 {
        ratio(self.delivered_bytes, self.offered_bytes)
    }

    /// What reached the receiver in the window, relative to the capacity offered.
    pub fn received_utilization(&self) -> f64 {
        ratio(self.received_bytes, self.offered_bytes)
    }

    /// Whether the lower of the two utilizations is at least `min_utilization` (0..1), with
    /// the figures in the description.
    fn check(&self, min_utilization: f64) -> (String, bool) {
        let (model, received) = (self.model_utilization(), self.received_utilization());
        let used = model.min(received);
        (
            format!(
                "flood at {} Mbit/s uses {:.2}% of the capacity (model {:.2}%, received {:.2}%), at least {}%",
                self.rate_mbit,
                100.0 * used,
                100.0 * model,
                100.0 * received,
                100.0 * min_utilization
            ),
            used >= min_utilization,
        )
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Asks for a receive buffer of `bytes`; failure (no privilege) only leaves the default.
fn set_receive_buffer(sock: &UdpSocket, bytes: usize) {
    let _ = sprout_os::socket_buffers::force_receive_buffer(sock, bytes);
}

/// A UDP socket on the emulator's outside address (any port), reading with a 50 ms timeout so
/// its thread notices when to stop; and its address.
fn outside_receiver(emu: &Emulator) -> Result<(UdpSocket, SocketAddr), EmuError> {
    let receiver = UdpSocket::bind(SocketAddr::new(emu.outside_addr().into(), 0))
        .map_err(io_err("bind the receiver"))?;
    receiver
        .set_read_timeout(Some(Duration::from_millis(50)))
        .map_err(io_err("receiver timeout"))?;
    let target = receiver.local_addr().map_err(io_err("receiver address"))?;
    Ok((receiver, target))
}

/// Floods the uplink of an emulator on a constant `rate_mbit` trace (20 ms delay, unlimited
/// queue) with 1500-byte IP packets paced at 1.1 times the capacity, and measures over
/// `[warmup_s, warmup_s + window_s)` how many bytes the model delivered (uplink log) and how
/// many reached the receiver, against the capacity offered.
pub fn flood(rate_mbit: f64, warmup_s: f64, window_s: f64) -> Result<FloodResult, EmuError> {
    let trace = Arc::new(
        constant_rate_trace(format!("constant-{rate_mbit}mbit"), rate_mbit, 1.0)
            .map_err(|e| io_err("trace")(std::io::Error::other(e.to_string())))?,
    );
    let dir = tempfile::tempdir().map_err(io_err("temporary directory"))?;
    let log_path = dir.path().join("uplink.log");
    let mut config = EmulatorConfig::new(trace.clone(), trace);
    config.uplink_log = Some(log_path.clone());
    let emu = Emulator::start(config)?;
    let epoch = emu.epoch_ns();
    let window_start_ns = epoch + (warmup_s * 1e9) as u64;
    let window_end_ns = window_start_ns + (window_s * 1e9) as u64;
    let send_until_ns = window_end_ns + 100_000_000;

    let (receiver, target) = outside_receiver(&emu)?;
    set_receive_buffer(&receiver, 16 << 20);
    let done = Arc::new(AtomicBool::new(false));
    let done_rx = done.clone();
    let receiving = std::thread::spawn(move || {
        let mut buf = vec![0u8; 2048];
        let mut bytes = 0u64;
        while !done_rx.load(Ordering::Relaxed) {
            if let Ok(n) = receiver.recv(&mut buf) {
                let t = monotonic_ns();
                if (window_start_ns..window_end_ns).contains(&t) {
                    bytes += (n + HEADERS_BYTES) as u64;
                }
            }
        }
        bytes
    });

    let mobile = emu.mobile_addr();
    let packets_per_s = FLOOD_PACE * rate_mbit * 1e6 / 8.0 / 1500.0;
    let sending = emu
        .run_on_namespace_thread(move || -> std::io::Result<u64> {
            let sock = UdpSocket::bind(SocketAddr::new(mobile.into(), 0))?;
            sock.connect(target)?;
            let payload = vec![0x5au8; FLOOD_PAYLOAD_BYTES];
            let start = monotonic_ns();
            let mut sent = 0u64;
            loop {
                let now = monotonic_ns();
                if now >= send_until_ns {
                    return Ok(sent);
                }
                let due = ((now - start) as f64 * 1e-9 * packets_per_s) as u64 + 1;
                let burst = due.saturating_sub(sent).min(256);
                for _ in 0..burst {
                    // ENOBUFS and the like: the packet is simply not sent.
                    let _ = sock.send(&payload);
                    sent += 1;
                }
                std::thread::sleep(Duration::from_micros(200));
            }
        })
        .map_err(io_err("start the sender"))?;
    let sent_packets = sending
        .join()
        .map_err(|_| io_err("sender")(std::io::Error::other("panicked")))?
        .map_err(io_err("sender"))?;
    // Let the packets already due in the window reach the receiver.
    std::thread::sleep(Duration::from_millis(20));
    done.store(true, Ordering::Relaxed);
    let received_bytes = receiving
        .join()
        .map_err(|_| io_err("receiver")(std::io::Error::other("panicked")))?;
    let report = emu.stop()?;

    let log = MmLog::load(&log_path)
        .map_err(|e| io_err("read the uplink log")(std::io::Error::other(e.to_string())))?;
    let from_ms = (warmup_s * 1000.0) as u64;
    let to_ms = from_ms + (window_s * 1000.0) as u64;
    let in_window = |ms: u64| (from_ms..to_ms).contains(&ms);
    let offered_bytes = log
        .opportunities
        .iter()
        .filter(|o| in_window(o.ms))
        .map(|o| o.bytes)
        .sum();
    let delivered_bytes = log
        .departures
        .iter()
        .filter(|d| in_window(d.ms))
        .map(|d| d.bytes)
        .sum();
    Ok(FloodResult {
        rate_mbit,
        window_start_s: warmup_s,
        window_s,
        offered_bytes,
        delivered_bytes,
        received_bytes,
        sent_packets,
        lateness_us: report.uplink.lateness_us,
    })
}

/// Result of [`probe`]. All histograms are in µs, one value per probe matched to the emulator's
/// record of it.
#[derive(Debug, Clone)]
pub struct ProbeResult {
    /// Configured one-way delay (ms).
    pub delay_ms: u64,
    /// Probes sent.
    pub sent: u64,
    /// Probes received.
    pub received: u64,
    /// One-way delay beyond the configured delay: receive time − send time − delay.
    pub extra_us: Histogram,
    /// The model's own part of it: the wait in the queue for the next trace opportunity
    /// (delivery − queue entry).
    pub model_wait_us: Histogram,
    /// What the emulator and the host add beyond the model: `extra − model wait` (the
    /// sender's kernel and the emulator's wake-up to read it, the emulator's lateness in
    /// writing it, the receiver's kernel and wake-up).
    pub overhead_us: Histogram,
    /// The emulator's lateness alone: write time − the model's delivery time.
    pub lateness_us: Histogram,
    /// From the sender's send to the emulator's read of the packet.
    pub ingress_us: Histogram,
}

/// Sends `rate_per_s` small UDP datagrams per second for `seconds` from inside the mobile
/// namespace to a receiver outside, over a 12 Mbit/s constant trace with `delay_ms` one-way
/// delay; each carries its `CLOCK_MONOTONIC` send time, compared at the receiver with the same
/// clock, and is matched (in order) with the emulator's record of it to split the extra delay.
pub fn probe(delay_ms: u64, rate_per_s: u32, seconds: f64) -> Result<ProbeResult, EmuError> {
    let trace = Arc::new(
        constant_rate_trace("constant-12mbit", 12.0, 1.0)
            .map_err(|e| io_err("trace")(std::io::Error::other(e.to_string())))?,
    );
    let count = (f64::from(rate_per_s) * seconds).round() as u64;
    let link = LinkConfig {
        propagation_delay_us: sprout_core::time::Duration::from_millis(delay_ms),
        ..LinkConfig::default()
    };
    let mut config = EmulatorConfig::new(trace.clone(), trace);
    config.uplink_link = link.clone();
    config.downlink_link = link;
    let emu = Emulator::start_recording(config, count as usize + 1000)?;
    let epoch = emu.epoch_ns();

    let (receiver, target) = outside_receiver(&emu)?;
    let done = Arc::new(AtomicBool::new(false));
    let done_rx = done.clone();
    let receiving = std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        let mut got: Vec<(u64, u64, u64)> = Vec::new(); // (seq, sent ns, received ns)
        while !done_rx.load(Ordering::Relaxed) {
            if let Ok(n) = receiver.recv(&mut buf) {
                let t = monotonic_ns();
                if n == PROBE_PAYLOAD_BYTES {
                    let seq = u64::from_le_bytes(buf[0..8].try_into().unwrap());
                    let sent = u64::from_le_bytes(buf[8..16].try_into().unwrap());
                    got.push((seq, sent, t));
                }
            }
        }
        got
    });

    let mobile = emu.mobile_addr();
    let interval_ns = 1_000_000_000 / u64::from(rate_per_s.max(1));
    let sending = emu
        .run_on_namespace_thread(move || -> std::io::Result<u64> {
            sprout_os::sched::set_precise_timer_slack();
            let sock = UdpSocket::bind(SocketAddr::new(mobile.into(), 0))?;
            sock.connect(target)?;
            let start = monotonic_ns();
            let mut payload = [0u8; PROBE_PAYLOAD_BYTES];
            for seq in 0..count {
                // Irregular phase against the 1 ms opportunities: 10 ms + 37 µs steps.
                let at = start + seq * (interval_ns + 37_000);
                let now = monotonic_ns();
                if at > now {
                    std::thread::sleep(Duration::from_nanos(at - now));
                }
                payload[0..8].copy_from_slice(&seq.to_le_bytes());
                payload[8..16].copy_from_slice(&monotonic_ns().to_le_bytes());
                sock.send(&payload)?;
            }
            Ok(count)
        })
        .map_err(io_err("start the sender"))?;
    let sent = sending
        .join()
        .map_err(|_| io_err("sender")(std::io::Error::other("panicked")))?
        .map_err(io_err("sender"))?;
    std::thread::sleep(Duration::from_millis(delay_ms + 50));
    done.store(true, Ordering::Relaxed);
    let mut got = receiving
        .join()
        .map_err(|_| io_err("receiver")(std::io::Error::other("panicked")))?;
    let report = emu.stop()?;
    got.sort_unstable();

    let probe_ip_bytes = (PROBE_PAYLOAD_BYTES + HEADERS_BYTES) as u32;
    let records: Vec<_> = report
        .uplink
        .deliveries
        .iter()
        .filter(|r| r.bytes == probe_ip_bytes)
        .collect();
    let delay_ns = delay_ms * 1_000_000;
    let mut result = ProbeResult {
        delay_ms,
        sent,
        received: got.len() as u64,
        extra_us: Histogram::new(),
        model_wait_us: Histogram::new(),
        overhead_us: Histogram::new(),
        lateness_us: Histogram::new(),
        ingress_us: Histogram::new(),
    };
    // Uplink deliveries are in sending order; match the i-th record with probe i (only when
    // every probe crossed, so the matching is certain).
    let matched = records.len() == got.len() && got.len() as u64 == sent;
    for (i, &(_, sent_ns, recv_ns)) in got.iter().enumerate() {
        let extra_ns = (recv_ns - sent_ns).saturating_sub(delay_ns);
        result.extra_us.record(extra_ns / 1000);
        if matched {
            let r = records[i];
            let wait_ns = (r.delivered_us - r.enqueued_us) * 1000;
            result.model_wait_us.record(wait_ns / 1000);
            result
                .overhead_us
                .record(extra_ns.saturating_sub(wait_ns) / 1000);
            result
                .lateness_us
                .record((r.written_ns.saturating_sub(r.delivered_us * 1000)) / 1000);
            result
                .ingress_us
                .record((epoch + r.read_ns).saturating_sub(sent_ns) / 1000);
        }
    }
    Ok(result)
}

/// The fidelity measurements: three floods and a probe.
#[derive(Debug, Clone)]
pub struct FidelityReport {
    /// Flood on a 12 Mbit/s link (one opportunity per ms).
    pub flood_12: FloodResult,
    /// Light probe (100 datagrams/s) with 20 ms delay on a 12 Mbit/s link.
    pub probe: ProbeResult,
    /// Flood on a 200 Mbit/s link (about 16.7 opportunities per ms).
    pub flood_200: FloodResult,
    /// Flood on a 1,000 Mbit/s link (about 83 opportunities per ms): the emulator at the
    /// highest rate the wide rate model forecasts.
    pub flood_1000: FloodResult,
}

/// Runs [`flood`] at 12 Mbit/s, [`probe`] (20 ms, 100/s) and [`flood`] at 200 and
/// 1,000 Mbit/s, one after the other, each over `seconds` (flood windows after 0.5 s of
/// warm-up).
pub fn run_all(seconds: f64) -> Result<FidelityReport, EmuError> {
    Ok(FidelityReport {
        flood_12: flood(12.0, 0.5, seconds)?,
        probe: probe(20, 100, seconds)?,
        flood_200: flood(200.0, 0.5, seconds)?,
        flood_1000: flood(1000.0, 0.5, seconds)?,
    })
}

impl FidelityReport {
    /// The floods' checks, (description with the figures, passed): at least 99% of a
    /// 12 Mbit/s link, 95% of a 200 Mbit/s one and 90% of a 1,000 Mbit/s one used (one
    /// sending thread, the emulator's one loop thread and one receiving thread on the host).
    pub fn flood_checks(&self) -> [(String, bool); 3] {
        [
            self.flood_12.check(0.99),
            self.flood_200.check(0.95),
            self.flood_1000.check(0.90),
        ]
    }

    /// The probe's check: every datagram arrives, and the 99th percentile of the delay beyond
    /// the model's opportunity wait is at most 1000 µs.
    pub fn probe_check(&self) -> (String, bool) {
        let q = |h: &Histogram, p: f64| h.quantile(p).unwrap_or(u64::MAX);
        let p = &self.probe;
        (
            format!(
                "probe: extra one-way delay beyond the model's opportunity wait p99 {} µs (p50 {} µs), at most 1000 µs; raw extra delay p99 {} µs of which the model's wait p99 {} µs",
                q(&p.overhead_us, 0.99),
                q(&p.overhead_us, 0.5),
                q(&p.extra_us, 0.99),
                q(&p.model_wait_us, 0.99)
            ),
            p.received == p.sent && q(&p.overhead_us, 0.99) <= 1000,
        )
    }

    /// The acceptance checks: (description with the figures, passed).
    pub fn checks(&self) -> Vec<(String, bool)> {
        let [flood_12, flood_200, flood_1000] = self.flood_checks();
        vec![flood_12, self.probe_check(), flood_200, flood_1000]
    }
}

impl fmt::Display for FidelityReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let q = |h: &Histogram, p: f64| {
            h.quantile(p)
                .map_or_else(|| "-".to_string(), |v| v.to_string())
        };
        writeln!(
            f,
            "{:<22} {:>9} {:>9} {:>12} {:>10} {:>10}",
            "flood", "model", "received", "sent pkts", "late p50", "late p99"
        )?;
        for r in [&self.flood_12, &self.flood_200, &self.flood_1000] {
            writeln!(
                f,
                "{:<22} {:>8.2}% {:>8.2}% {:>12} {:>7} µs {:>7} µs",
                format!("{} Mbit/s, {:.1} s", r.rate_mbit, r.window_s),
                100.0 * r.model_utilization(),
                100.0 * r.received_utilization(),
                r.sent_packets,
                q(&r.lateness_us, 0.5),
                q(&r.lateness_us, 0.99)
            )?;
        }
        let p = &self.probe;
        writeln!(
            f,
            "probe ({} of {} received, {} ms delay), µs: {:>6} {:>6} {:>6}",
            p.received, p.sent, p.delay_ms, "p50", "p99", "max"
        )?;
        for (name, h) in [
            ("extra one-way delay", &p.extra_us),
            ("  model's opportunity wait", &p.model_wait_us),
            ("  emulator + host overhead", &p.overhead_us),
            ("    sender to emulator read", &p.ingress_us),
            ("    emulator lateness", &p.lateness_us),
        ] {
            writeln!(
                f,
                "{:<43} {:>6} {:>6} {:>6}",
                name,
                q(h, 0.5),
                q(h, 0.99),
                h.max()
            )?;
        }
        for (text, ok) in self.checks() {
            writeln!(f, "{} {text}", if ok { "✅" } else { "❌" })?;
        }
        Ok(())
    }
}

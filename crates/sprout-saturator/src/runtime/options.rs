//! What the server and the client run with ([`ServerOptions`], [`ClientOptions`]), checked
//! ([`ClientOptions::validate`]) and rendered as the `sprout` command line that asks for them
//! ([`ClientOptions::to_args`]), so that a program starting a peer never spells a flag.

use sprout_core::direction::Load;
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use sprout_core::time::{self, TimeUnit};

use crate::runtime::error::SaturatorError;
use crate::sender::{SenderConfig, DEFAULT_HIGH_RTT, DEFAULT_LOW_RTT};
use crate::wire::{
    MAX_HIGH_RTT_MS, MAX_PAYLOAD_BYTES, MAX_RECORDING_LIMIT_MS, MAX_WINDOW, MIN_PAYLOAD_BYTES,
};

/// The server's default idle timeout, s: a recording client's data and acks flow many times a
/// second, so this much silence means it crashed or left.
pub const DEFAULT_IDLE_TIMEOUT_S: u64 = 5;
/// The server's default bound on one recording's length, s (10 minutes): one client holds the
/// server, which records one session at a time, at most this long.
pub const DEFAULT_MAX_RECORDING_S: u64 = 600;
/// The server's default largest IP packet, bytes (jumbo frames).
pub const DEFAULT_MAX_MTU: u32 = 9000;

/// `sprout saturator server`: waits for a client and runs the recording it asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerOptions {
    /// Address and port to listen on (data and feedback).
    pub listen: SocketAddr,
    /// Also write each recording of the uplink here, as `<name>.up` and `<name>.up.json`.
    pub out: Option<PathBuf>,
    /// Exit after the first recording.
    pub once: bool,
    /// End a recording whose client has been silent this long (the recording is cut where
    /// the client was last heard).
    pub idle_timeout: Duration,
    /// Longest recording of one client (whole milliseconds, 1 ms to a day): the server ends a
    /// recording there (cut at the bound, the client told so) and refuses other clients
    /// meanwhile, saying when to try again.
    pub max_recording: Duration,
    /// Largest IP packet of the data packets a hello may ask for, bytes.
    pub max_mtu: u32,
    /// JSON lines instead of text.
    pub json: bool,
    /// No per-second lines.
    pub quiet: bool,
}

impl ServerOptions {
    /// The defaults of `sprout saturator server` listening on `listen`: no folder, 5 s idle
    /// timeout, recordings up to 10 minutes, packets up to 9000 bytes, text, per-second lines.
    pub fn new(listen: SocketAddr) -> ServerOptions {
        ServerOptions {
            listen,
            out: None,
            once: false,
            idle_timeout: Duration::from_secs(DEFAULT_IDLE_TIMEOUT_S),
            max_recording: Duration::from_secs(DEFAULT_MAX_RECORDING_S),
            max_mtu: DEFAULT_MAX_MTU,
            json: false,
            quiet: false,
        }
    }

    /// Checks the options.
    pub fn validate(&self) -> Result<(), SaturatorError> {
        if self.idle_timeout.is_zero() {
            return Err(SaturatorError::IdleTimeout);
        }
        let ms = self.max_recording.as_millis();
        if ms == 0
            || ms > u128::from(MAX_RECORDING_LIMIT_MS)
            || !self.max_recording.subsec_micros().is_multiple_of(1000)
        {
            return Err(SaturatorError::MaxRecording);
        }
        if !(MIN_PAYLOAD_BYTES + 48..=MAX_PAYLOAD_BYTES + 28).contains(&self.max_mtu) {
            return Err(SaturatorError::MaxMtu(self.max_mtu));
        }
        Ok(())
    }

    /// Largest UDP payload of the data packets to or from `addr`, bytes.
    pub fn max_payload(&self, addr: &SocketAddr) -> u32 {
        self.max_mtu
            .saturating_sub(ip_udp_overhead(addr))
            .min(MAX_PAYLOAD_BYTES)
    }

    /// The arguments of `sprout` that run this server (`saturator server ...`).
    pub fn to_args(&self) -> Vec<OsString> {
        let mut a = Args::new("server");
        a.value("--listen", self.listen);
        if let Some(out) = &self.out {
            a.path("--out", out);
        }
        a.flag("--once", self.once);
        a.value("--idle-timeout", self.idle_timeout.as_secs_f64());
        a.value("--max-recording", self.max_recording.as_secs_f64());
        a.value("--max-mtu", self.max_mtu);
        a.flag("--json", self.json);
        a.flag("--quiet", self.quiet);
        a.0
    }
}

/// `sprout saturator client`: records a link to a server.
#[derive(Clone, Debug, PartialEq)]
pub struct ClientOptions {
    /// The server's address and port (the data path).
    pub connect: SocketAddr,
    /// The server's address and port over a second path, for the feedback of both directions
    /// and the transfer of the uplink's recording (`None`: the data path).
    pub feedback: Option<SocketAddr>,
    /// Directions to saturate and record (`None`: both with a feedback path, else the
    /// downlink only: see [`ClientOptions::mode`]).
    pub direction: Option<Load>,
    /// Length of the recording (`None`: until Ctrl-C).
    pub duration: Option<Duration>,
    /// Output prefix: writes `NAME.down`, `NAME.up` and `NAME.json` (and `NAME.down.partial`
    /// while recording).
    pub name: PathBuf,
    /// Low RTT mark of both senders (`--low-rtt-ms`), whole milliseconds as the hello carries
    /// it ([`ClientOptions::validate`] refuses a fraction).
    pub low_rtt: time::Duration,
    /// High RTT mark of both senders (`--high-rtt-ms`), whole milliseconds.
    pub high_rtt: time::Duration,
    /// Largest window of both senders, packets.
    pub max_window: u32,
    /// IP packet size of the data packets, bytes.
    pub mtu: u32,
    /// How long to wait, after the recording, for the server's recording of the uplink.
    pub fetch_timeout: Duration,
    /// JSON lines instead of text.
    pub json: bool,
    /// No per-second lines.
    pub quiet: bool,
}

impl ClientOptions {
    /// The defaults of `sprout saturator client` to `connect`: the downlink (no feedback path)
    /// until Ctrl-C, feedback over the data path, prefix `saturator`, 750 ms / 3000 ms, window up to 100 000,
    /// MTU 1500, 60 s to fetch the uplink's recording, text, per-second lines.
    pub fn new(connect: SocketAddr) -> ClientOptions {
        ClientOptions {
            connect,
            feedback: None,
            direction: None,
            duration: None,
            name: PathBuf::from("saturator"),
            low_rtt: DEFAULT_LOW_RTT,
            high_rtt: DEFAULT_HIGH_RTT,
            max_window: 100_000,
            mtu: 1500,
            fetch_timeout: Duration::from_secs(60),
            json: false,
            quiet: false,
        }
    }

    /// Checks the options; the UDP payload of the data packets, bytes.
    pub fn validate(&self) -> Result<u32, SaturatorError> {
        let payload = payload_for(self.mtu, &self.connect)?;
        if self.max_window == 0 {
            return Err(SaturatorError::MaxWindow);
        }
        self.sender_config()
            .validate()
            .map_err(SaturatorError::RttMarks)?;
        if self.max_window > MAX_WINDOW {
            return Err(SaturatorError::MaxWindow);
        }
        if self.high_rtt > time::Duration::from_millis(u64::from(MAX_HIGH_RTT_MS)) {
            return Err(SaturatorError::HighRtt);
        }
        if [self.low_rtt, self.high_rtt]
            .iter()
            .any(|d| d.as_micros() % 1_000 != 0)
        {
            return Err(SaturatorError::RttFraction);
        }
        if self.name.as_os_str().is_empty() || self.name.file_name().is_none() {
            return Err(SaturatorError::Name(self.name.clone()));
        }
        Ok(payload)
    }

    /// The directions recorded: the one asked for, else both with a feedback path and the
    /// downlink alone without one (over one path the feedback of each direction would queue
    /// behind the other direction's saturated data and the recording would miss
    /// opportunities).
    pub fn mode(&self) -> Load {
        self.direction.unwrap_or(if self.feedback.is_some() {
            Load::Both
        } else {
            Load::Down
        })
    }

    /// Whether both directions are saturated over one path (asked for explicitly): the
    /// recording under-states the link, and the client says so.
    pub fn both_over_one_path(&self) -> bool {
        self.mode() == Load::Both && self.feedback.is_none()
    }

    /// The configuration of both senders.
    pub fn sender_config(&self) -> SenderConfig {
        SenderConfig::with(self.low_rtt, self.high_rtt, self.max_window)
    }

    /// The RTT marks in whole milliseconds (rounded down, at most `u32::MAX`), as the hello
    /// and the command line carry them: (low, high).
    pub fn rtt_marks_ms(&self) -> (u32, u32) {
        let ms = |d: time::Duration| u32::try_from(d.as_millis()).unwrap_or(u32::MAX);
        (ms(self.low_rtt), ms(self.high_rtt))
    }

    /// The arguments of `sprout` that run this client (`saturator client ...`).
    pub fn to_args(&self) -> Vec<OsString> {
        let mut a = Args::new("client");
        a.value("--connect", self.connect);
        if let Some(f) = self.feedback {
            a.value("--feedback", f);
        }
        if let Some(d) = self.direction {
            a.value("--direction", d.as_str());
        }
        if let Some(d) = self.duration {
            a.value("--duration", d.as_secs_f64());
        }
        a.path("--name", &self.name);
        let (low, high) = self.rtt_marks_ms();
        a.value("--low-rtt-ms", low);
        a.value("--high-rtt-ms", high);
        a.value("--max-window", self.max_window);
        a.value("--mtu", self.mtu);
        a.value("--fetch-timeout", self.fetch_timeout.as_secs_f64());
        a.flag("--json", self.json);
        a.flag("--quiet", self.quiet);
        a.0
    }
}

/// A length of `s` seconds given on the command line as `--{option}` (finite, at least 0, or
/// above 0 when `positive`), through the one duration parser
/// ([`sprout_core::time::parse_duration`]: rounded to the nearest µs).
pub fn seconds(s: f64, positive: bool, option: &str) -> Result<Duration, SaturatorError> {
    let d = sprout_core::time::parse_duration(s, TimeUnit::Seconds, positive, option)?;
    Ok(d.into())
}

/// UDP payload of a data packet for an IP packet of `mtu` bytes to `addr`, bytes (28 bytes of
/// headers over IPv4, 48 over IPv6).
pub fn payload_for(mtu: u32, addr: &SocketAddr) -> Result<u32, SaturatorError> {
    let p = mtu.saturating_sub(ip_udp_overhead(addr));
    if !(MIN_PAYLOAD_BYTES..=MAX_PAYLOAD_BYTES).contains(&p) {
        return Err(SaturatorError::Mtu { mtu, payload: p });
    }
    Ok(p)
}

/// IP and UDP headers of a datagram to `addr`, bytes.
pub(crate) fn ip_udp_overhead(addr: &SocketAddr) -> u32 {
    if addr.is_ipv4() {
        28
    } else {
        48
    }
}

/// A command line being rendered.
struct Args(Vec<OsString>);

impl Args {
    fn new(verb: &str) -> Args {
        Args(vec!["saturator".into(), verb.into()])
    }

    fn value(&mut self, flag: &str, v: impl ToString) {
        self.0.push(flag.into());
        self.0.push(v.to_string().into());
    }

    fn path(&mut self, flag: &str, p: &std::path::Path) {
        self.0.push(flag.into());
        self.0.push(p.as_os_str().to_owned());
    }

    fn flag(&mut self, flag: &str, on: bool) {
        if on {
            self.0.push(flag.into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_sizes() {
        let v4: SocketAddr = "10.0.0.1:9".parse().unwrap();
        let v6: SocketAddr = "[::1]:9".parse().unwrap();
        assert_eq!(payload_for(1500, &v4).unwrap(), 1472);
        assert_eq!(payload_for(1500, &v6).unwrap(), 1452);
        assert!(payload_for(100, &v4).is_err());
    }

    #[test]
    fn the_rtt_marks_are_whole_milliseconds() {
        let mut o = ClientOptions::new("10.0.0.1:9".parse().unwrap());
        assert_eq!(o.rtt_marks_ms(), (750, 3000));
        assert!(o.validate().is_ok());
        let args = o.to_args();
        let after = |flag: &str| {
            let i = args.iter().position(|a| a == flag).unwrap();
            args[i + 1].clone()
        };
        assert_eq!(
            (after("--low-rtt-ms"), after("--high-rtt-ms")),
            ("750".into(), "3000".into())
        );
        o.low_rtt = time::Duration::from_micros(750_500);
        assert!(matches!(o.validate(), Err(SaturatorError::RttFraction)));
        o.low_rtt = time::Duration::from_millis(750);
        o.high_rtt = time::Duration::from_millis(u64::from(MAX_HIGH_RTT_MS) + 1);
        assert!(matches!(o.validate(), Err(SaturatorError::HighRtt)));
        o.high_rtt = time::Duration::from_millis(500);
        assert!(matches!(o.validate(), Err(SaturatorError::RttMarks(_))));
    }

    #[test]
    fn seconds_go_through_the_one_parser() {
        let s = |v, positive| seconds(v, positive, "fetch-timeout");
        assert_eq!(s(1.5, false).unwrap(), Duration::from_micros(1_500_000));
        assert_eq!(s(0.0, false).unwrap(), Duration::ZERO);
        // Rounded to the nearest microsecond, as the simulator's options are.
        assert_eq!(s(0.0000015, false).unwrap(), Duration::from_micros(2));
        assert_eq!(
            s(-1.0, false).unwrap_err().to_string(),
            "--fetch-timeout must be a non-negative number of seconds, got -1"
        );
        assert_eq!(
            seconds(0.0, true, "idle-timeout").unwrap_err().to_string(),
            "--idle-timeout must be a positive number of seconds, got 0"
        );
        assert!(s(f64::NAN, false).is_err());
    }
}

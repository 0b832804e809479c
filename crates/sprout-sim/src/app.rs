//! What the application at a sending end offers the transport ([`App`]), its specs
//! (`constant:rate=500k`, as `sprout sim --app` takes them), and the arrival process of each
//! kind of source ([`Source`]): when each message (a datagram, or a video frame) is created and
//! how many bytes it holds.
//!
//! Rates are bits per second (`k`, `M`, `G` = 10^3, 10^6, 10^9), times microseconds in the
//! simulator, seconds in specs.

use std::fmt;

use serde::{Deserialize, Serialize};
use sprout_core::time::{Duration, Instant};

use crate::error::SimError;

/// Lowest application rate a spec accepts, bit/s (1 kbit/s).
pub const MIN_RATE_BPS: f64 = 1e3;
/// Highest application rate a spec accepts, bit/s (10 Gbit/s).
pub const MAX_RATE_BPS: f64 = 1e10;
/// Lowest frame rate, frames/s.
pub const MIN_FPS: f64 = 1.0;
/// Highest frame rate, frames/s.
pub const MAX_FPS: f64 = 240.0;
/// Longest key-frame interval, seconds (one hour).
pub const MAX_KEY_INTERVAL_S: f64 = 3600.0;
/// Largest constant-stream datagram, bytes (the largest UDP payload).
pub const MAX_PACKET_BYTES: u32 = 65_507;
/// Largest key-frame ratio.
pub const MAX_KEY_RATIO: f64 = 1000.0;

/// Default datagram size of a constant stream, bytes.
pub const DEFAULT_PACKET_BYTES: u32 = 1200;
/// Default frame rate, frames/s.
pub const DEFAULT_FPS: f64 = 30.0;
/// Default key-frame interval, seconds.
pub const DEFAULT_KEY_INTERVAL_S: f64 = 3.0;
/// Default key-frame size, in average frames.
pub const DEFAULT_KEY_RATIO: f64 = 5.0;
/// Default lowest rate of adaptive video, bit/s.
pub const DEFAULT_MIN_BPS: f64 = 100e3;
/// Default highest rate of adaptive video, bit/s.
pub const DEFAULT_MAX_BPS: f64 = 20e6;

/// What the application at the sending end(s) offers the transport.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum App {
    /// Always more to send (the paper's saturating sender). Default.
    #[default]
    Bulk,
    /// A constant-rate stream: one datagram of `packet_bytes` application bytes every
    /// `packet_bytes * 8 / rate_bps` seconds.
    Constant {
        /// Application rate, bit/s.
        rate_bps: f64,
        /// Application bytes per datagram.
        packet_bytes: u32,
    },
    /// Video-like: frames at `fps`, mean rate `rate_bps`; every `key_interval_s` seconds a
    /// key frame `key_ratio` times an average frame (the other frames smaller so the mean
    /// holds); each frame cut into datagrams of at most the transport's payload.
    Video {
        /// Mean application rate, bit/s.
        rate_bps: f64,
        /// Frames per second.
        fps: f64,
        /// Seconds between key frames.
        key_interval_s: f64,
        /// A key frame's size, in average frames.
        key_ratio: f64,
    },
    /// Adaptive video: frames at `fps`, each sized by what the transport allows at capture
    /// time, clamped to `[min_bps, max_bps] / fps` bytes per frame; a frame is skipped while
    /// the previous one still waits in the sender.
    Adaptive {
        /// Frames per second.
        fps: f64,
        /// Lowest rate, bit/s (the smallest frame is `min_bps / 8 / fps` bytes).
        min_bps: f64,
        /// Highest rate, bit/s (the largest frame is `max_bps / 8 / fps` bytes).
        max_bps: f64,
    },
}

/// A bad app spec or value: `app 'SPEC': WHY`.
fn bad(spec: &str, why: impl Into<String>) -> SimError {
    SimError::BadApp {
        spec: spec.to_string(),
        why: why.into(),
    }
}

/// A rate with an optional `k`, `M` or `G` suffix (10^3, 10^6, 10^9 bit/s), e.g. `500k`.
fn parse_rate(value: &str) -> Option<f64> {
    let (number, scale) = match value.chars().last()? {
        'k' | 'K' => (&value[..value.len() - 1], 1e3),
        'M' => (&value[..value.len() - 1], 1e6),
        'G' | 'g' => (&value[..value.len() - 1], 1e9),
        _ => (value, 1.0),
    };
    number.trim().parse::<f64>().ok().map(|v| v * scale)
}

/// A rate as specs write it: the largest of `G`, `M`, `k` that gives back exactly the value.
fn format_rate(bps: f64) -> String {
    for (unit, suffix) in [(1e9, "G"), (1e6, "M"), (1e3, "k")] {
        if bps >= unit {
            let text = format!("{}", bps / unit);
            if text.parse::<f64>().ok().map(|v| v * unit) == Some(bps) {
                return format!("{text}{suffix}");
            }
        }
    }
    format!("{bps}")
}

/// Checks a value in `[lo, hi]` (finite), naming `key` in the error.
fn check_range(
    spec: &str,
    key: &str,
    v: f64,
    lo: f64,
    hi: f64,
    unit: &str,
) -> Result<(), SimError> {
    if v.is_finite() && v >= lo && v <= hi {
        Ok(())
    } else {
        Err(bad(
            spec,
            format!("{key} must be between {lo} and {hi} {unit}, got {v}"),
        ))
    }
}

impl App {
    /// Parses a spec: `bulk`, `constant:rate=R[,packet=B]`,
    /// `video:rate=R[,fps=F][,key=S][,keyratio=X]`, `adaptive:[fps=F][,min=R][,max=R]`, rates
    /// in bit/s with an optional `k`/`M`/`G` suffix. Defaults: packet 1200 bytes, fps 30,
    /// key 3 s, keyratio 5, min 100k, max 20M. Every value is checked ([`App::validate`]);
    /// an unknown, repeated, missing or bad key is a [`SimError::BadApp`] naming it.
    pub fn parse(spec: &str) -> Result<App, SimError> {
        let text = spec.trim();
        let (kind, rest) = text.split_once(':').unwrap_or((text, ""));
        let allowed: &[&str] = match kind {
            "bulk" => &[],
            "constant" => &["rate", "packet"],
            "video" => &["rate", "fps", "key", "keyratio"],
            "adaptive" => &["fps", "min", "max"],
            _ => {
                return Err(bad(
                    spec,
                    format!("unknown kind '{kind}' (expected bulk, constant, video or adaptive)"),
                ))
            }
        };
        let mut values: Vec<(&str, f64)> = Vec::new();
        for item in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let Some((key, value)) = item.split_once('=') else {
                return Err(bad(spec, format!("'{item}' is not KEY=VALUE")));
            };
            let (key, value) = (key.trim(), value.trim());
            if !allowed.contains(&key) {
                return Err(bad(
                    spec,
                    format!(
                        "unknown key '{key}' for {kind} (known: {})",
                        if allowed.is_empty() {
                            "none".to_string()
                        } else {
                            allowed.join(", ")
                        }
                    ),
                ));
            }
            if values.iter().any(|(k, _)| *k == key) {
                return Err(bad(spec, format!("{key} given twice")));
            }
            let is_rate = matches!(key, "rate" | "min" | "max");
            let v = if is_rate {
                parse_rate(value)
            } else {
                value.parse::<f64>().ok()
            };
            let v = v.ok_or_else(|| bad(spec, format!("{key}: '{value}' is not a number")))?;
            values.push((key, v));
        }
        let get = |key: &str| values.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
        let required =
            |key: &str| get(key).ok_or_else(|| bad(spec, format!("{kind} needs {key}=")));
        let app = match kind {
            "bulk" => App::Bulk,
            "constant" => {
                let packet = get("packet").unwrap_or(DEFAULT_PACKET_BYTES as f64);
                if packet.fract() != 0.0 || !(1.0..=MAX_PACKET_BYTES as f64).contains(&packet) {
                    return Err(bad(
                        spec,
                        format!("packet must be a whole number of bytes from 1 to {MAX_PACKET_BYTES}, got {packet}"),
                    ));
                }
                App::Constant {
                    rate_bps: required("rate")?,
                    packet_bytes: packet as u32,
                }
            }
            "video" => App::Video {
                rate_bps: required("rate")?,
                fps: get("fps").unwrap_or(DEFAULT_FPS),
                key_interval_s: get("key").unwrap_or(DEFAULT_KEY_INTERVAL_S),
                key_ratio: get("keyratio").unwrap_or(DEFAULT_KEY_RATIO),
            },
            _ => App::Adaptive {
                fps: get("fps").unwrap_or(DEFAULT_FPS),
                min_bps: get("min").unwrap_or(DEFAULT_MIN_BPS),
                max_bps: get("max").unwrap_or(DEFAULT_MAX_BPS),
            },
        };
        app.check(spec)?;
        Ok(app)
    }

    /// Checks every value (finite; rates 1 kbit/s to 10 Gbit/s; fps 1 to 240; a key frame at
    /// least one frame apart, its ratio from 1 to fewer than the frames between key frames;
    /// min at most max), as [`App::parse`] does for a spec: for apps built in code.
    pub fn validate(&self) -> Result<(), SimError> {
        self.check(&self.to_string())
    }

    fn check(&self, spec: &str) -> Result<(), SimError> {
        let rate =
            |key: &str, v: f64| check_range(spec, key, v, MIN_RATE_BPS, MAX_RATE_BPS, "bit/s");
        let fps = |v: f64| check_range(spec, "fps", v, MIN_FPS, MAX_FPS, "frames/s");
        match *self {
            App::Bulk => Ok(()),
            App::Constant {
                rate_bps,
                packet_bytes,
            } => {
                if packet_bytes == 0 || packet_bytes > MAX_PACKET_BYTES {
                    return Err(bad(
                        spec,
                        format!(
                            "packet must be from 1 to {MAX_PACKET_BYTES} bytes, got {packet_bytes}"
                        ),
                    ));
                }
                rate("rate", rate_bps)
            }
            App::Video {
                rate_bps,
                fps: f,
                key_interval_s,
                key_ratio,
            } => {
                rate("rate", rate_bps)?;
                fps(f)?;
                check_range(
                    spec,
                    "key",
                    key_interval_s,
                    1.0 / f,
                    MAX_KEY_INTERVAL_S,
                    "seconds (at least one frame interval)",
                )?;
                check_range(
                    spec,
                    "keyratio",
                    key_ratio,
                    1.0,
                    MAX_KEY_RATIO,
                    "average frames",
                )?;
                let frames = key_frame_spacing(f, key_interval_s);
                if key_ratio > 1.0 && key_ratio >= frames as f64 {
                    return Err(bad(
                        spec,
                        format!(
                            "keyratio must be less than the {frames} frame(s) between key frames \
                             (key x fps), or the other frames could not keep the mean rate; got {key_ratio}"
                        ),
                    ));
                }
                Ok(())
            }
            App::Adaptive {
                fps: f,
                min_bps,
                max_bps,
            } => {
                fps(f)?;
                rate("min", min_bps)?;
                rate("max", max_bps)?;
                if min_bps > max_bps {
                    return Err(bad(
                        spec,
                        format!("min ({min_bps} bit/s) is above max ({max_bps} bit/s)"),
                    ));
                }
                Ok(())
            }
        }
    }

    /// Whether this is the saturating sender.
    pub fn is_bulk(&self) -> bool {
        *self == App::Bulk
    }

    /// Messages (datagrams or frames) the source creates per second at most.
    pub fn messages_per_s(&self) -> f64 {
        match *self {
            App::Bulk => 0.0,
            App::Constant {
                rate_bps,
                packet_bytes,
            } => rate_bps / 8.0 / packet_bytes as f64,
            App::Video { fps, .. } | App::Adaptive { fps, .. } => fps,
        }
    }

    /// Datagrams per second the source creates at most, with at most `max_payload` bytes
    /// each (an estimate for sizing a run; adaptive video at its highest rate).
    pub fn datagrams_per_s(&self, max_payload: usize) -> f64 {
        let max_payload = max_payload.max(1) as f64;
        match *self {
            App::Bulk => 0.0,
            App::Constant {
                rate_bps,
                packet_bytes,
            } => rate_bps / 8.0 / packet_bytes as f64 * (packet_bytes as f64 / max_payload).ceil(),
            App::Video {
                rate_bps: r, fps, ..
            }
            | App::Adaptive {
                max_bps: r, fps, ..
            } => fps + r / 8.0 / max_payload,
        }
    }
}

impl std::str::FromStr for App {
    type Err = SimError;
    fn from_str(s: &str) -> Result<App, SimError> {
        App::parse(s)
    }
}

impl fmt::Display for App {
    /// The canonical spec, every key given (`constant:rate=500k,packet=1200`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            App::Bulk => write!(f, "bulk"),
            App::Constant {
                rate_bps,
                packet_bytes,
            } => {
                write!(
                    f,
                    "constant:rate={},packet={packet_bytes}",
                    format_rate(rate_bps)
                )
            }
            App::Video {
                rate_bps,
                fps,
                key_interval_s,
                key_ratio,
            } => write!(
                f,
                "video:rate={},fps={fps},key={key_interval_s},keyratio={key_ratio}",
                format_rate(rate_bps)
            ),
            App::Adaptive {
                fps,
                min_bps,
                max_bps,
            } => write!(
                f,
                "adaptive:fps={fps},min={},max={}",
                format_rate(min_bps),
                format_rate(max_bps)
            ),
        }
    }
}

/// Frames from one key frame to the next: `key_interval_s * fps`, rounded, at least 1.
fn key_frame_spacing(fps: f64, key_interval_s: f64) -> u64 {
    ((key_interval_s * fps).round() as u64).max(1)
}

/// The instant of the `i`-th event of a process with `per_event_us / per_s` µs between
/// events, from `start`: computed from `i` (dividing last, so that whole periods stay
/// whole), so that no rounding accumulates.
fn nth_time(start: Instant, i: u64, per_event_us: f64, per_s: f64) -> Instant {
    start + Duration::from_micros((i as f64 * per_event_us / per_s).floor() as u64)
}

/// A source's arrival process: when its messages are created and how many bytes each holds.
#[derive(Clone, Debug)]
pub struct Source {
    app: App,
    start: Instant,
    /// Index of the next message (frame) slot.
    index: u64,
    /// When the next message is created.
    next: Instant,
    /// Time between messages: `period.0 / period.1` µs.
    period: (f64, f64),
    /// Fractional bytes owed to the next frames (Video), so that sizes sum to the mean rate.
    carry: f64,
}

impl Source {
    /// The source of `app` starting at `start` (its first message then); `None` for
    /// [`App::Bulk`], which has no arrival process.
    pub fn new(app: App, start: Instant) -> Option<Source> {
        let period = match app {
            App::Bulk => return None,
            App::Constant {
                rate_bps,
                packet_bytes,
            } => (packet_bytes as f64 * 8e6, rate_bps),
            App::Video { fps, .. } | App::Adaptive { fps, .. } => (1e6, fps),
        };
        Some(Source {
            app,
            start,
            index: 0,
            next: start,
            period,
            carry: 0.0,
        })
    }

    /// When the next message is created.
    pub fn next_at(&self) -> Instant {
        self.next
    }

    /// Whether [`Source::emit`] reads the transport's allowance (adaptive video only).
    pub fn adapts(&self) -> bool {
        matches!(self.app, App::Adaptive { .. })
    }

    /// The message due at [`Source::next_at`], in bytes, and moves on to the next slot.
    /// `allowance` is called only by adaptive video: the bytes the transport allows now, or
    /// `None` while the sender still holds an earlier frame, which skips this frame (`None`
    /// returned).
    pub fn emit(&mut self, allowance: impl FnOnce() -> Option<u64>) -> Option<u64> {
        let i = self.index;
        self.index += 1;
        self.next = nth_time(self.start, self.index, self.period.0, self.period.1);
        match self.app {
            App::Bulk => None,
            App::Constant { packet_bytes, .. } => Some(packet_bytes as u64),
            App::Video {
                rate_bps,
                fps,
                key_interval_s,
                key_ratio,
            } => {
                let mean = rate_bps / 8.0 / fps;
                let spacing = key_frame_spacing(fps, key_interval_s);
                let size = if spacing == 1 {
                    mean
                } else if i.is_multiple_of(spacing) {
                    key_ratio * mean
                } else {
                    mean * (spacing as f64 - key_ratio) / (spacing as f64 - 1.0)
                };
                self.carry += size;
                let bytes = self.carry.round().max(1.0);
                self.carry -= bytes;
                Some(bytes as u64)
            }
            App::Adaptive {
                fps,
                min_bps,
                max_bps,
            } => {
                let lo = (min_bps / 8.0 / fps).round().max(1.0) as u64;
                let hi = ((max_bps / 8.0 / fps).round() as u64).max(lo);
                allowance().map(|a| a.clamp(lo, hi))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(spec: &str) -> String {
        App::parse(spec).unwrap_err().to_string()
    }

    #[test]
    fn good_specs_parse_with_their_defaults_and_print_back() {
        assert_eq!(App::parse("bulk").unwrap(), App::Bulk);
        assert_eq!(
            App::parse("constant:rate=500k").unwrap(),
            App::Constant {
                rate_bps: 500e3,
                packet_bytes: 1200
            }
        );
        assert_eq!(
            App::parse("constant:rate=2M,packet=1000").unwrap(),
            App::Constant {
                rate_bps: 2e6,
                packet_bytes: 1000
            }
        );
        assert_eq!(
            App::parse("video:rate=1M,fps=30,key=3,keyratio=5").unwrap(),
            App::Video {
                rate_bps: 1e6,
                fps: 30.0,
                key_interval_s: 3.0,
                key_ratio: 5.0
            }
        );
        assert_eq!(
            App::parse("video:rate=1M").unwrap(),
            App::parse("video:rate=1000000,fps=30,key=3,keyratio=5").unwrap()
        );
        assert_eq!(
            App::parse("adaptive:fps=30,min=100k,max=8M").unwrap(),
            App::Adaptive {
                fps: 30.0,
                min_bps: 100e3,
                max_bps: 8e6
            }
        );
        assert_eq!(
            App::parse("adaptive").unwrap(),
            App::Adaptive {
                fps: 30.0,
                min_bps: 100e3,
                max_bps: 20e6
            }
        );
        for (spec, canonical) in [
            ("bulk", "bulk"),
            ("constant:rate=500k", "constant:rate=500k,packet=1200"),
            (
                "constant:rate=1.5M,packet=100",
                "constant:rate=1.5M,packet=100",
            ),
            ("constant:rate=1234.5", "constant:rate=1.2345k,packet=1200"),
            ("video:rate=1M", "video:rate=1M,fps=30,key=3,keyratio=5"),
            ("adaptive", "adaptive:fps=30,min=100k,max=20M"),
            ("constant:rate=10G", "constant:rate=10G,packet=1200"),
        ] {
            let app = App::parse(spec).unwrap();
            assert_eq!(app.to_string(), canonical, "{spec}");
            assert_eq!(App::parse(canonical).unwrap(), app, "{canonical}");
        }
    }

    #[test]
    fn bad_specs_name_what_is_wrong() {
        assert!(err("tcp").contains("unknown kind 'tcp'"), "{}", err("tcp"));
        assert!(err("constant").contains("constant needs rate="));
        assert!(err("constant:rate=500k,fps=30").contains("unknown key 'fps' for constant"));
        assert!(err("constant:rate=5,")
            .contains("rate must be between 1000 and 10000000000 bit/s, got 5"));
        assert!(err("constant:rate=20G").contains("rate must be between"));
        assert!(err("constant:rate=fast").contains("rate: 'fast' is not a number"));
        assert!(err("constant:rate=NaN").contains("rate must be between"));
        assert!(err("constant:rate=inf").contains("rate must be between"));
        assert!(err("constant:rate=1M,rate=2M").contains("rate given twice"));
        assert!(err("constant:rate=1M,packet=0").contains("packet must be"));
        assert!(err("constant:rate=1M,packet=1.5").contains("packet must be"));
        assert!(err("constant:rate=1M,packet=70000").contains("packet must be"));
        assert!(err("constant:rate").contains("'rate' is not KEY=VALUE"));
        assert!(err("video:rate=1M,fps=0").contains("fps must be between 1 and 240"));
        assert!(err("video:rate=1M,fps=300").contains("fps must be between"));
        assert!(err("video:rate=1M,key=-1").contains("key must be"));
        assert!(err("video:rate=1M,keyratio=0.5").contains("keyratio must be between 1"));
        assert!(err("video:rate=1M,fps=10,key=0.3,keyratio=3")
            .contains("keyratio must be less than the 3 frame(s)"));
        assert!(err("adaptive:min=2M,max=1M").contains("min (2000000 bit/s) is above max"));
        assert!(err("adaptive:max=0").contains("max must be between"));
        assert!(err("bulk:rate=1M").contains("unknown key 'rate' for bulk (known: none)"));
        assert!(err("constant:rate=-1M").starts_with("app 'constant:rate=-1M': rate must be"));
        assert!(App::parse("constant:rate=1M").unwrap().validate().is_ok());
        assert!(App::Constant {
            rate_bps: f64::NAN,
            packet_bytes: 10
        }
        .validate()
        .is_err());
    }

    /// The creation times (µs) and sizes of a source's messages over its first `run`, with a
    /// fixed allowance for adaptive video.
    fn messages(app: App, run: Duration, allowance: Option<u64>) -> Vec<(u64, u64)> {
        let mut s = Source::new(app, Instant::ZERO).unwrap();
        let mut out = Vec::new();
        while s.next_at() < Instant::ZERO + run {
            let t = s.next_at().as_micros();
            if let Some(b) = s.emit(|| allowance) {
                out.push((t, b));
            }
        }
        out
    }

    #[test]
    fn a_constant_stream_keeps_its_exact_rate() {
        // 500 kbit/s of 1200-byte datagrams: one every 19.2 ms.
        let m = messages(
            App::parse("constant:rate=500k").unwrap(),
            Duration::from_secs(60),
            None,
        );
        assert_eq!(m.len(), 3125);
        assert!(m.iter().all(|&(_, b)| b == 1200));
        assert_eq!(m[1].0, 19_200);
        assert_eq!(m[3124].0, 59_980_800);
        // A period that is not a whole number of µs: 1000 bytes at 3 Mbit/s, 2666.67 µs.
        let m = messages(
            App::parse("constant:rate=3M,packet=1000").unwrap(),
            Duration::from_secs(10),
            None,
        );
        assert_eq!(m.len(), 3750);
        assert_eq!(m[3].0, 8_000);
        assert_eq!(m[1].0, 2_666);
    }

    #[test]
    fn video_keeps_its_mean_rate_and_its_key_frames() {
        let app = App::parse("video:rate=1M,fps=30,key=3,keyratio=5").unwrap();
        let m = messages(app, Duration::from_secs(10), None);
        assert_eq!(m.len(), 300);
        let bytes: u64 = m.iter().map(|&(_, b)| b).sum();
        let rate = bytes as f64 * 8.0 / 10.0;
        assert!((rate - 1e6).abs() < 0.02 * 1e6, "mean rate {rate}");
        // An average frame is 1e6 / 8 / 30 = 4166.7 bytes; a key frame 5 times that, every
        // 90 frames (3 s); the other frames (90 - 5) / 89 of the mean.
        let keys: Vec<usize> = (0..m.len()).filter(|&i| m[i].1 > 10_000).collect();
        assert_eq!(keys, vec![0, 90, 180, 270]);
        for &k in &keys {
            assert!(
                (m[k].1 as f64 - 5.0 * 4166.67).abs() <= 1.0,
                "key frame {}",
                m[k].1
            );
            assert_eq!(m[k].0, k as u64 * 100_000 / 3);
        }
        assert_eq!(m[90].0, 3_000_000);
        let other = 4166.67 * 85.0 / 89.0;
        assert!(m
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 90 != 0)
            .all(|(_, &(_, b))| (b as f64 - other).abs() <= 1.0));
    }

    #[test]
    fn adaptive_video_sizes_frames_by_the_transport_and_skips_behind_a_waiting_frame() {
        let app = App::parse("adaptive:fps=25,min=100k,max=8M").unwrap();
        // Frames every 40 ms; each sized by the allowance, clamped to 500..40000 bytes.
        assert_eq!(
            messages(app, Duration::from_secs(1), Some(7_000)),
            vec![(0, 7000), (40_000, 7000)]
                .into_iter()
                .chain((2..25).map(|i| (i * 40_000, 7000)))
                .collect::<Vec<_>>()
        );
        assert!(messages(app, Duration::from_millis(200), Some(10))
            .iter()
            .all(|&(_, b)| b == 500));
        assert!(messages(app, Duration::from_millis(200), Some(1 << 30))
            .iter()
            .all(|&(_, b)| b == 40_000));
        // A sender still holding a frame skips the next ones.
        let mut s = Source::new(app, Instant::from_millis(1)).unwrap();
        let mut sizes = Vec::new();
        for allowance in [Some(3000), None, None, Some(9000)] {
            let t = s.next_at().as_micros();
            sizes.push((t, s.emit(|| allowance)));
        }
        assert_eq!(
            sizes,
            vec![
                (1_000, Some(3000)),
                (41_000, None),
                (81_000, None),
                (121_000, Some(9000))
            ]
        );
    }
}

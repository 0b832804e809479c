//! Times and sizes as the command line writes them in the link's options: `50ms`, `0.5s`,
//! `250us`.

use sprout_core::time::{parse_duration, Duration, TimeUnit};

/// A time written `Nms`, `Ns` or `Nus` (N a non-negative decimal number), rounded to whole µs;
/// `None` if the text is not one, or is longer than an hour.
pub fn parse_time(text: &str) -> Option<Duration> {
    let text = text.trim();
    let (number, micros) = if let Some(n) = text.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix("us") {
        (n, 1e-3)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1e3)
    } else {
        return None;
    };
    let number = number.trim();
    if number.is_empty() || !number.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return None;
    }
    let value: f64 = number.parse().ok()?;
    let d = parse_duration(value * micros, TimeUnit::Milliseconds, false, "time").ok()?;
    (d <= Duration::from_secs(3600)).then_some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_in_each_unit() {
        assert_eq!(parse_time("50ms"), Some(Duration::from_millis(50)));
        assert_eq!(parse_time("0.5s"), Some(Duration::from_millis(500)));
        assert_eq!(parse_time("250us"), Some(Duration::from_micros(250)));
        assert_eq!(parse_time(" 2.5ms "), Some(Duration::from_micros(2500)));
        for bad in ["", "ms", "5", "-5ms", "5 min", "1e3ms", "7200s"] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
    }
}

//! The request line that starts each connection: `SPROUT-TCP <up|down> <controller> <seconds>`.

use crate::kernel_tcp::error::RequestError;

/// Longest controller name the kernel accepts (`TCP_CA_NAME_MAX` is 16 with the NUL).
const CC_NAME_MAX: usize = 15;

/// What one connection carries, from its request line.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// `true`: the client sends ("up"); `false`: the server sends ("down").
    pub up: bool,
    /// Kernel congestion controller of the sender.
    pub cc: String,
    /// Transfer length, s.
    pub seconds: f64,
}

impl Request {
    /// The line, with its newline.
    pub fn line(&self) -> String {
        let dir = if self.up { "up" } else { "down" };
        format!("SPROUT-TCP {dir} {} {}\n", self.cc, self.seconds)
    }

    /// Reads a line (without its newline).
    pub fn parse(line: &str) -> Result<Request, RequestError> {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let [magic, dir, cc, secs] = parts[..] else {
            return Err(RequestError::Malformed(line.to_string()));
        };
        if magic != "SPROUT-TCP" {
            return Err(RequestError::NotSproutTcp(line.to_string()));
        }
        let up = match dir {
            "up" => true,
            "down" => false,
            _ => return Err(RequestError::Direction(dir.to_string())),
        };
        check_cc_name(cc)?;
        let seconds: f64 = secs
            .parse()
            .ok()
            .filter(|s: &f64| s.is_finite() && *s > 0.0 && *s <= 86_400.0)
            .ok_or_else(|| RequestError::Duration(secs.to_string()))?;
        Ok(Request {
            up,
            cc: cc.to_string(),
            seconds,
        })
    }
}

/// Checks a congestion controller's name: 1 to 15 letters, digits or `_`.
pub(crate) fn check_cc_name(cc: &str) -> Result<(), RequestError> {
    if cc.is_empty()
        || cc.len() > CC_NAME_MAX
        || !cc.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        return Err(RequestError::ControllerName(cc.to_string()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_round_trip_and_bad_ones_are_refused() {
        let r = Request {
            up: false,
            cc: "bbr".into(),
            seconds: 2.5,
        };
        assert_eq!(Request::parse(r.line().trim_end()).unwrap(), r);
        for bad in [
            "",
            "HELLO up cubic 3",
            "SPROUT-TCP sideways cubic 3",
            "SPROUT-TCP up cu/bic 3",
            "SPROUT-TCP up cubic -1",
            "SPROUT-TCP up cubic NaN",
            "SPROUT-TCP up cubic 3 extra",
            "SPROUT-TCP up averyveryverylongname 3",
        ] {
            assert!(Request::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }
}

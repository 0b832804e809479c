//! The one formatter of an error's cause chain, [`chain_message`]: how `sprout` prints an
//! error, how a sweep records a failed run, the message of the Python package's exceptions and
//! what the kernel-TCP server says of a failed client. It lives on the bottom floor so that
//! every crate that prints an error can use it (`sprout_sim::error` re-exports it); no other
//! function walks `source()` (`tools/floors` checks it).

/// An error and its causes joined by ": ", each said once: a cause whose text the message so
/// far already contains (`"{path}: {source}"` errors that also expose their source) is not
/// repeated.
pub fn chain_message(e: &(dyn std::error::Error + 'static)) -> String {
    let mut msg = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !msg.contains(&text) {
            msg.push_str(": ");
            msg.push_str(&text);
        }
        cause = c.source();
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error with a message and an optional cause.
    #[derive(Debug)]
    struct E(&'static str, Option<Box<E>>);

    impl std::fmt::Display for E {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for E {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|e| e as _)
        }
    }

    #[test]
    fn each_cause_is_said_once() {
        let e = E("reading a.up", Some(Box::new(E("No such file", None))));
        assert_eq!(chain_message(&e), "reading a.up: No such file");
        let e = E(
            "reading a.up: No such file",
            Some(Box::new(E("No such file", None))),
        );
        assert_eq!(chain_message(&e), "reading a.up: No such file");
        let e = E("a", Some(Box::new(E("b", Some(Box::new(E("c", None)))))));
        assert_eq!(chain_message(&e), "a: b: c");
    }
}

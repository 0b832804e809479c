//! Fuzz targets for the text formats the tools read from files: mahimahi traces
//! (`sprout_link::Trace::parse`) and mm-link logs (`sprout_link::MmLog::parse`).

use sprout_link::{MmLog, Trace};

use crate::Target;

/// The longest error message a bad input may give, bytes: a bad line is quoted in an excerpt
/// (`sprout_files::excerpt`), never whole.
const MAX_ERROR_BYTES: usize = 200;

/// Parses any bytes (as lossy UTF-8) as a mahimahi trace: a short error or a trace whose
/// opportunities are sorted.
#[derive(Default)]
pub struct TraceTarget;

impl Target for TraceTarget {
    fn name(&self) -> &'static str {
        "trace"
    }

    fn seeds(&mut self) -> Vec<Vec<u8>> {
        vec![
            b"0\n1\n1\n2\n5\n20\n".to_vec(),
            b"# comment\n10\n10\n10\n4294967295\n".to_vec(),
            b"1\r\n2\r\n3\r\n".to_vec(),
            [&b"1\n"[..], &[b'7'; 300], b"x\n"].concat(),
        ]
    }

    fn run(&mut self, input: &[u8]) {
        let text = String::from_utf8_lossy(input);
        match Trace::parse("fuzz", &text) {
            Ok(t) => {
                let ms = t.opportunities_ms();
                assert!(!ms.is_empty(), "a parsed trace has opportunities");
                assert!(ms.windows(2).all(|w| w[0] <= w[1]), "opportunities sorted");
            }
            Err(e) => assert!(e.to_string().len() <= MAX_ERROR_BYTES, "long error: {e}"),
        }
    }
}

/// Parses any bytes as an mm-link log: a log or a short error.
#[derive(Default)]
pub struct MmLogTarget;

impl Target for MmLogTarget {
    fn name(&self) -> &'static str {
        "mmlog"
    }

    fn seeds(&mut self) -> Vec<Vec<u8>> {
        vec![
            b"# mahimahi mm-link [downlink] trace.down\n# init timestamp: 1000\n# base timestamp: 0\n0 + 1500\n1 # 1500\n1 - 1500 1\n2 d 1500 3\n"
                .to_vec(),
            [&b"0 + "[..], &[b'9'; 300], b"\n"].concat(),
        ]
    }

    fn run(&mut self, input: &[u8]) {
        if let Err(e) = MmLog::parse(input) {
            assert!(e.to_string().len() <= MAX_ERROR_BYTES, "long error: {e}");
        }
    }
}

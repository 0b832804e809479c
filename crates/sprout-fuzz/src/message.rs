//! Fuzz target: `sprout_net::message::Message::decode`, the application messages of
//! `sprout server` / `sprout client` (HELLO, ACCEPT, DATA, BYE), which arrive from the peer.

use sprout_core::direction::Load;
use sprout_net::message::{self, Bye, Data, Hello, Message, Mode, SproutVariant};

use crate::Target;

/// Decodes any bytes; a decoded message must re-encode to the bytes it was read from.
#[derive(Default)]
pub struct MessageTarget;

impl Target for MessageTarget {
    fn name(&self) -> &'static str {
        "message"
    }

    fn seeds(&mut self) -> Vec<Vec<u8>> {
        let hello = Hello {
            session: 0x0123_4567_89ab_cdef,
            direction: Load::Both,
            mode: Mode::Paced,
            scheme: SproutVariant::Sprout,
            confidence: 0.95,
            rate_kbps: 500,
            duration_ms: 10_000,
            payload_bytes: 1000,
        };
        let data = Data {
            seq: 42,
            sent_us: 1_700_000_000_000_000,
        };
        let bye = Bye {
            session: 7,
            data_sent: 1000,
            app_bytes_sent: 1_000_000,
        };
        vec![
            hello.encode(),
            message::encode_accept(7),
            data.encode(24),
            data.encode(200),
            bye.encode(),
            vec![0],
        ]
    }

    fn run(&mut self, input: &[u8]) {
        let Ok(m) = Message::decode(input) else {
            return;
        };
        // Every field the decoder reads is written back by the encoder; bytes it ignores
        // (padding, reserved) are not compared.
        let again = match m {
            Message::Filler => return,
            Message::Hello(h) => h.encode(),
            Message::Accept(s) => message::encode_accept(s),
            Message::Data(d) => d.encode(input.len()),
            Message::Bye(b) => b.encode(),
        };
        assert_eq!(
            Message::decode(&again),
            Ok(m),
            "a decoded message re-encodes to the same message"
        );
    }
}

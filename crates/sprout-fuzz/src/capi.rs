//! Fuzz target: libsprout's C entry points (`sprout_conn_*`), called as C calls them, on a
//! client and a server connection with an established session.
//!
//! Each input is a script of operations, `[op, len, len bytes]...`: a datagram fed to either
//! side (hostile bytes, or a genuine datagram of the session replayed or cut), time moved
//! forward or backward (any 64-bit time), messages sent, datagrams and messages polled into
//! small buffers, a BYE, a close, HELLOs encoded from any bytes. After the script a genuine
//! exchange runs. Every other pair greets with a HELLO (the wide model on both sides, ACCEPTs
//! from the server), the others with plain bytes. No call may return
//! `SPROUT_STATUS_INTERNAL` (a panic caught at the boundary), the genuine exchange's calls
//! must succeed and its messages keep their bytes; a pair that ended (closed, timed out) is
//! replaced by a fresh one.

use sprout::{
    sprout_conn_close, sprout_conn_deadline, sprout_conn_free, sprout_conn_new_client,
    sprout_conn_new_server, sprout_conn_on_timeout, sprout_conn_poll_event,
    sprout_conn_poll_transmit, sprout_conn_read, sprout_conn_recv, sprout_conn_send,
    sprout_conn_send_bye, sprout_conn_stats, sprout_hello_encode, sprout_keygen, SproutConn,
    SproutEvent, SproutHello, SproutMessage, SproutMessageKind, SproutState, SproutStats,
    SproutStatus, SPROUT_DIRECTION_UP, SPROUT_HELLO_BYTES, SPROUT_MAX_DATAGRAM_BYTES,
    SPROUT_MODE_PACED, SPROUT_SCHEME_SPROUT_WIDE,
};

use crate::Target;

/// A client and a server connection, and the target's clock.
pub struct CapiTarget {
    client: *mut SproutConn,
    server: *mut SproutConn,
    now_us: u64,
    /// Genuine datagrams of the session (client's, then server's), for seeds and replays.
    captured: Vec<(bool, Vec<u8>)>,
    /// Whether the next pair greets with a HELLO.
    hello: bool,
}

/// A HELLO greeting of `sprout client`'s defaults (the wide model), as C encodes it.
fn hello_greeting() -> Vec<u8> {
    let h = SproutHello {
        session: 7,
        direction: SPROUT_DIRECTION_UP,
        mode: SPROUT_MODE_PACED,
        scheme: SPROUT_SCHEME_SPROUT_WIDE,
        confidence: 0.95,
        rate_kbps: 1000,
        duration_ms: 10_000,
        payload_bytes: 1000,
    };
    let mut buf = vec![0u8; SPROUT_HELLO_BYTES];
    let mut len = 0;
    ok(
        sprout_hello_encode(&h, buf.as_mut_ptr(), buf.len(), &mut len),
        "hello_encode",
    );
    buf.truncate(len);
    buf
}

/// A HELLO of fields read from `arg` (zeros past its end), encoded: accepted or refused,
/// never a panic.
fn fuzz_hello(arg: &[u8]) {
    let at = |i: usize| arg.get(i).copied().unwrap_or(0);
    let word = |i: usize, n: usize| (i..i + n).fold(0u64, |w, j| (w << 8) | at(j) as u64);
    let h = SproutHello {
        session: word(1, 8),
        direction: at(9),
        mode: at(10),
        scheme: at(11),
        confidence: f64::from_bits(word(12, 8)),
        rate_kbps: word(20, 4) as u32,
        duration_ms: word(24, 4) as u32,
        payload_bytes: word(28, 2) as u16,
    };
    let cap = at(30) as usize % (SPROUT_HELLO_BYTES + 2);
    let mut buf = vec![0u8; cap];
    let mut len = 0;
    no_panic(
        sprout_hello_encode(&h, buf.as_mut_ptr(), cap, &mut len),
        "hello_encode",
    );
}

fn ok(s: SproutStatus, what: &str) {
    assert!(
        matches!(s, SproutStatus::Ok | SproutStatus::Done),
        "{what}: {s:?}"
    );
}

/// Every status but an internal error (a panic caught at the boundary).
fn no_panic(s: SproutStatus, what: &str) {
    assert_ne!(s, SproutStatus::Internal, "{what}");
}

fn new_conn(
    client: bool,
    now_us: u64,
    keys: &([u8; 32], [u8; 32], [u8; 32], [u8; 32]),
    greeting: &[u8],
) -> *mut SproutConn {
    let (ck, cp, sk, sp) = keys;
    let mut conn = std::ptr::null_mut();
    let s = if client {
        sprout_conn_new_client(
            ck.as_ptr(),
            sp.as_ptr(),
            greeting.as_ptr(),
            greeting.len(),
            now_us,
            &mut conn,
        )
    } else {
        sprout_conn_new_server(sk.as_ptr(), cp.as_ptr(), now_us, &mut conn)
    };
    ok(s, "new connection");
    conn
}

fn state(conn: *mut SproutConn, now_us: u64) -> SproutState {
    let mut st = SproutStats::default();
    ok(sprout_conn_stats(conn, now_us, &mut st), "stats");
    st.state
}

impl Default for CapiTarget {
    fn default() -> Self {
        Self::new()
    }
}

impl CapiTarget {
    /// A new target: a fresh pair, established.
    pub fn new() -> Self {
        let mut t = CapiTarget {
            client: std::ptr::null_mut(),
            server: std::ptr::null_mut(),
            now_us: 1_000_000,
            captured: Vec::new(),
            hello: false,
        };
        t.fresh_pair();
        t
    }

    fn fresh_pair(&mut self) {
        sprout_conn_free(self.client);
        sprout_conn_free(self.server);
        let (mut ck, mut cp, mut sk, mut sp) = ([0u8; 32], [0u8; 32], [0u8; 32], [0u8; 32]);
        ok(sprout_keygen(ck.as_mut_ptr(), cp.as_mut_ptr()), "keygen");
        ok(sprout_keygen(sk.as_mut_ptr(), sp.as_mut_ptr()), "keygen");
        let keys = (ck, cp, sk, sp);
        let greeting = if self.hello {
            hello_greeting()
        } else {
            b"fuzz".to_vec()
        };
        self.hello = !self.hello;
        self.client = new_conn(true, self.now_us, &keys, &greeting);
        self.server = new_conn(false, self.now_us, &keys, &greeting);
        self.captured.clear();
        for _ in 0..20 {
            self.exchange(true);
        }
    }

    /// One genuine round at the next millisecond: timers, a message each way, every datagram
    /// delivered, every message read (and checked); captured if `capture`.
    fn exchange(&mut self, capture: bool) {
        self.now_us = self.now_us.saturating_add(1_000);
        let now = self.now_us;
        for (from_client, conn) in [(true, self.client), (false, self.server)] {
            let mut deadline = 0;
            ok(sprout_conn_deadline(conn, &mut deadline), "deadline");
            if deadline <= now {
                ok(sprout_conn_on_timeout(conn, now), "on_timeout");
            }
            let m = [from_client as u8; 100];
            no_panic(sprout_conn_send(conn, now, m.as_ptr(), m.len()), "send");
        }
        let mut buf = vec![0u8; SPROUT_MAX_DATAGRAM_BYTES];
        for (from_client, from, to) in [
            (true, self.client, self.server),
            (false, self.server, self.client),
        ] {
            let mut len = 0;
            let mut sent = 0;
            while sprout_conn_poll_transmit(from, now, buf.as_mut_ptr(), buf.len(), &mut len)
                == SproutStatus::Ok
            {
                sent += 1;
                assert!(
                    sent < 1_000_000,
                    "endless datagrams at one time ({now} us) from the {}: {:?}",
                    if from_client { "client" } else { "server" },
                    &buf[..len.min(40)]
                );
                ok(sprout_conn_recv(to, now, buf.as_ptr(), len), "recv");
                if capture && self.captured.len() < 64 {
                    self.captured.push((from_client, buf[..len].to_vec()));
                }
            }
        }
        for (conn, from_client) in [(self.client, false), (self.server, true)] {
            let mut info = SproutMessage::default();
            let mut ev = SproutEvent::None;
            while sprout_conn_poll_event(conn, &mut ev) == SproutStatus::Ok {}
            while sprout_conn_read(conn, &mut info, buf.as_mut_ptr(), buf.len()) == SproutStatus::Ok
            {
                // Genuine messages are 100 bytes of the sender's side; hostile datagrams never
                // get through the seal.
                if info.kind == SproutMessageKind::Data && info.len == 100 {
                    assert!(
                        buf[..100].iter().all(|&b| b == from_client as u8),
                        "a message's bytes changed"
                    );
                }
            }
        }
    }

    /// Runs one operation of a script.
    fn op(&mut self, op: u8, arg: &[u8]) {
        let to_client = op & 1 == 1;
        let conn = if to_client { self.client } else { self.server };
        let word = arg.iter().take(8).fold(0u64, |w, &b| (w << 8) | b as u64);
        match op % 10 {
            0 | 1 => no_panic(
                sprout_conn_recv(conn, self.now_us, arg.as_ptr(), arg.len()),
                "recv",
            ),
            2 | 3 => {
                // A genuine datagram replayed, cut or altered at one byte.
                let Some((_, d)) = self
                    .captured
                    .get(word as usize % self.captured.len().max(1))
                else {
                    return;
                };
                let mut d = d.clone();
                if let Some(&b) = arg.get(8) {
                    if !d.is_empty() {
                        let i = b as usize % d.len();
                        d[i] ^= arg.get(9).copied().unwrap_or(1);
                    }
                }
                d.truncate(
                    arg.get(10)
                        .map_or(d.len(), |&n| d.len().min(n as usize * 8)),
                );
                no_panic(
                    sprout_conn_recv(conn, self.now_us, d.as_ptr(), d.len()),
                    "recv",
                );
            }
            4 | 5 => {
                // Time moves forward up to 20 ms (one of the receiver's ticks, each costly
                // enough to bound the run's speed), or, marked by a second byte (0x5a: the
                // seeds have them; a session that ends costs a fresh pair), up to 2 minutes or
                // to any time below 2^62 us, backward too: the connection keeps the latest time
                // it saw and shows its protocol at most 60 s of a gap. (Times at the end of the
                // clock, u64::MAX frozen for hundreds of inputs, once made the client send
                // datagrams without end: not yet understood, see the note of issue 37.)
                let t = match (arg.get(8), arg.get(9)) {
                    (Some(0xff), Some(0x5a)) => word >> 2,
                    (Some(0xfe), Some(0x5a)) => self.now_us.saturating_add(word % 120_000_000),
                    _ => self.now_us.saturating_add(word % 20_000),
                };
                no_panic(sprout_conn_on_timeout(conn, t), "on_timeout");
                self.now_us = self.now_us.max(t);
            }
            6 | 7 => {
                // At most 99 bytes: the genuine exchange's messages are the 100-byte ones.
                let m = &arg[..arg.len().min(99)];
                no_panic(sprout_conn_send(conn, word, m.as_ptr(), m.len()), "send");
            }
            8 => {
                let cap = arg.first().map_or(0, |&b| b as usize * 8);
                let mut buf = vec![0u8; cap];
                let mut len = 0;
                no_panic(
                    sprout_conn_poll_transmit(conn, word, buf.as_mut_ptr(), cap, &mut len),
                    "poll_transmit",
                );
                let mut info = SproutMessage::default();
                no_panic(
                    sprout_conn_read(conn, &mut info, buf.as_mut_ptr(), cap),
                    "read",
                );
            }
            _ => match arg.first() {
                Some(0xc1) => no_panic(sprout_conn_close(conn, self.now_us), "close"),
                Some(0xb1) => no_panic(sprout_conn_send_bye(conn), "send_bye"),
                Some(0xe1) => fuzz_hello(arg),
                _ => {}
            },
        }
    }
}

impl Drop for CapiTarget {
    fn drop(&mut self) {
        sprout_conn_free(self.client);
        sprout_conn_free(self.server);
    }
}

impl Target for CapiTarget {
    fn name(&self) -> &'static str {
        "capi"
    }

    fn seeds(&mut self) -> Vec<Vec<u8>> {
        let mut seeds = Vec::new();
        for (i, (from_client, d)) in self.captured.iter().enumerate() {
            let n = d.len().min(255);
            let mut s = vec![u8::from(*from_client), n as u8];
            s.extend_from_slice(&d[..n]);
            seeds.push(s);
            seeds.push(vec![
                2 + u8::from(*from_client),
                11,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                i as u8,
                5,
                3,
                200,
            ]);
        }
        seeds.push(vec![4, 8, 0, 0, 0, 0, 0, 0, 0x42, 0x40]);
        // Jumps: 90 s ahead (the server's session idles out), and to a time near the end of
        // the clock (both ends then see it through the exchange).
        seeds.push(vec![5, 10, 0, 0, 0, 0, 0x05, 0x5d, 0x4a, 0x80, 0xfe, 0x5a]);
        seeds.push(vec![
            4, 10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0xff, 0x5a,
        ]);
        seeds.push(vec![6, 4, 1, 2, 3, 4, 8, 1, 16]);
        seeds.push(vec![9, 1, 0xb1, 8, 1, 16]);
        let mut hello = vec![9, 31, 0xe1];
        hello.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 1, 2, 1, 2]);
        hello.extend_from_slice(&0.95f64.to_bits().to_be_bytes());
        hello.extend_from_slice(&[0, 0, 3, 232, 0, 0, 39, 16, 3, 232, 36]);
        seeds.push(hello);
        seeds
    }

    fn run(&mut self, input: &[u8]) {
        let mut rest = input;
        while let [op, len, tail @ ..] = rest {
            let n = (*len as usize).min(tail.len());
            self.op(*op, &tail[..n]);
            rest = &tail[n..];
        }
        self.exchange(false);
        let ended = [self.client, self.server]
            .iter()
            .any(|&c| state(c, self.now_us) != SproutState::Established);
        if ended {
            self.fresh_pair();
        }
    }
}

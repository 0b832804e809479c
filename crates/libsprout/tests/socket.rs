//! The socket layer (`sprout_socket_*`): examples/c/socket_echo.c, built with plain `cc`
//! against the header and `-lsprout`, over loopback against its own server side and against
//! `sprout server`, every message delivered; the same client under valgrind (when installed,
//! with Sprout-EWMA);
//! and the C functions' refusals of bad arguments, called as C calls them. Each test takes
//! well under 5 s.

use std::ffi::CString;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::ptr::{null, null_mut};
use std::time::Duration;

use serde_json::Value;
use sprout::{
    sprout_keygen, sprout_last_error, sprout_socket_accept, sprout_socket_bind,
    sprout_socket_close, sprout_socket_connect, sprout_socket_end_reason, sprout_socket_fd,
    sprout_socket_forecast, sprout_socket_free, sprout_socket_max_message, sprout_socket_peer,
    sprout_socket_recv, sprout_socket_send, sprout_socket_send_bye, sprout_socket_server_fd,
    sprout_socket_server_free, sprout_socket_server_local_addr, sprout_socket_stats, SproutSocket,
    SproutSocketMessage, SproutSocketServer, SproutState, SproutStats, SproutStatus,
    SPROUT_KEY_BYTES,
};

use crate::example::{build, finish};
use crate::interop::{cc, sprout_bin};

/// Longest a program of these tests may run.
const LIMIT: Duration = Duration::from_secs(5);

/// Messages each client sends: at 800 kbit/s with 500-byte messages, 0.5 s of stream.
const COUNT: &str = "100";

/// Starts `socket_echo server 127.0.0.1:0 1`; its address and hex key from its first line.
fn echo_server(exe: &Path) -> (Child, BufReader<ChildStdout>, String, String) {
    let mut server = Command::new(exe)
        .args(["server", "127.0.0.1:0", "1"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting socket_echo server");
    let mut out = BufReader::new(server.stdout.take().expect("its stdout"));
    let mut first = String::new();
    out.read_line(&mut first).expect("the server's first line");
    let words: Vec<&str> = first.split_whitespace().collect();
    match words.as_slice() {
        ["socket_echo", "server", "on", addr, "key", key, "base64", _] => {
            let (addr, key) = (addr.to_string(), key.to_string());
            (server, out, addr, key)
        }
        _ => {
            let _ = server.kill();
            panic!("unexpected first line of the server: {first:?}");
        }
    }
}

/// Runs the example's client against its own server side, `client` being the command that
/// runs it (plain, or under valgrind) with `options`, sending `count` messages; both outputs.
fn echo_run(
    exe: &Path,
    mut client: Command,
    options: &[&str],
    count: &str,
    limit: Duration,
) -> (String, String) {
    let (server, out, addr, key) = echo_server(exe);
    let child = client
        .arg("client")
        .args(options)
        .args([&addr, &key, count, "800", "500"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting socket_echo client");
    let mut sent = String::new();
    let client_ok = finish(child, limit, &mut sent);
    let mut server = server;
    server.stdout = Some(out.into_inner());
    let mut got = String::new();
    let server_ok = finish(server, LIMIT, &mut got);
    println!("{sent}{got}");
    assert!(client_ok && server_ok, "client:\n{sent}\nserver:\n{got}");
    (sent, got)
}

#[test]
fn the_socket_example_echoes_every_message_over_loopback() {
    let Some(cc) = cc() else {
        return;
    };
    let _one = crate::c::one_at_a_time();
    let exe = build(&cc, "socket_echo");
    let (sent, got) = echo_run(&exe, Command::new(&exe), &[], COUNT, LIMIT);
    assert!(
        got.contains(&format!("server: {COUNT} messages, delay p95 ")),
        "the server got every message:\n{got}"
    );
    assert!(
        sent.contains(&format!("client: sent {COUNT} messages, {COUNT} echoed")),
        "every echo came back:\n{sent}"
    );
    let p95: f64 = sent
        .split("echo delay p95 ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|w| w.parse().ok())
        .unwrap_or(f64::MAX);
    assert!(
        p95 < 100.0,
        "echo delay p95 {p95} ms over loopback:\n{sent}"
    );
}

#[test]
fn the_socket_example_greets_sprout_server_and_delivers_every_message() {
    let (Some(sprout), Some(cc)) = (sprout_bin(), cc()) else {
        return;
    };
    let _one = crate::c::one_at_a_time();
    let exe = build(&cc, "socket_echo");
    let mut server = Command::new(&sprout)
        .args(["server", "--once", "--allow-any-client", "--json"])
        .arg("--listen=127.0.0.1:0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting sprout server");
    let mut notes = BufReader::new(server.stderr.take().expect("its stderr"));
    let mut banner = String::new();
    notes.read_line(&mut banner).expect("the server's banner");
    // "sprout server listening on ADDR with public key KEY (ephemeral)"
    let words: Vec<&str> = banner.split_whitespace().collect();
    let (Some(addr), Some(key)) = (words.get(4), words.get(8)) else {
        let _ = server.kill();
        panic!("unexpected banner: {banner:?}");
    };
    let client = Command::new(&exe)
        .args(["client", "--hello", addr, key, COUNT, "800", "500"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting socket_echo client");
    let mut sent = String::new();
    let client_ok = finish(client, LIMIT, &mut sent);
    let mut out = String::new();
    let server_ok = finish(server, LIMIT, &mut out);
    drop(notes);
    println!("{sent}{out}");
    assert!(client_ok && server_ok, "client:\n{sent}\nserver:\n{out}");
    assert!(
        sent.contains(&format!("client: sent {COUNT} messages")),
        "{sent}"
    );
    let s = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "summary")
        .unwrap_or_else(|| panic!("no summary in:\n{out}"));
    // The HELLO's stream, every DATA the BYE counts, the session ended by the BYE.
    assert_eq!(
        (&s["direction"], &s["mode"], &s["end"]),
        (
            &Value::from("up"),
            &Value::from("paced"),
            &Value::from("bye")
        ),
        "{s}"
    );
    let n: u64 = COUNT.parse().unwrap();
    assert_eq!(s["data_received"].as_u64(), Some(n), "{s}");
    assert_eq!(s["peer_data_sent"].as_u64(), Some(n), "{s}");
}

#[test]
fn the_socket_example_runs_clean_under_valgrind() {
    let Some(cc) = cc() else {
        return;
    };
    if !crate::c::have("valgrind") {
        println!("skipped: valgrind is not installed");
        return;
    }
    let _one = crate::c::one_at_a_time();
    let exe = build(&cc, "socket_echo");
    let mut vg = Command::new("valgrind");
    vg.args([
        "--error-exitcode=1",
        "--leak-check=full",
        "--errors-for-leak-kinds=definite,indirect,possible",
        "-q",
    ])
    .arg(&exe);
    // Sprout-EWMA (its HELLO names it for both ends): no forecast tables to compute, which
    // takes seconds under valgrind; the rest of the code is the same.
    // It takes 3 to 4 s on a loaded 2-core machine; the limit is only against a hang.
    let (sent, got) = echo_run(&exe, vg, &["--scheme", "sprout-ewma"], "20", 4 * LIMIT);
    assert!(
        sent.contains("client: sent 20 messages, 20 echoed") && got.contains("server: 20 messages"),
        "under valgrind:\n{sent}\n{got}"
    );
}

fn last_error() -> String {
    let mut buf = [0 as std::ffi::c_char; 256];
    let n = sprout_last_error(buf.as_mut_ptr(), buf.len()).min(255);
    buf[..n].iter().map(|&c| c as u8 as char).collect()
}

fn keys() -> ([u8; 32], [u8; 32]) {
    let (mut private, mut public) = ([0u8; SPROUT_KEY_BYTES], [0u8; SPROUT_KEY_BYTES]);
    assert_eq!(
        sprout_keygen(private.as_mut_ptr(), public.as_mut_ptr()),
        SproutStatus::Ok
    );
    (private, public)
}

#[test]
fn bad_arguments_are_refused_with_a_status_and_a_message() {
    let (private, public) = keys();
    let local = CString::new("127.0.0.1:0").unwrap();
    let mut s: *mut SproutSocket = null_mut();
    let mut srv: *mut SproutSocketServer = null_mut();
    let call = |addr: *const std::ffi::c_char,
                key: *const u8,
                greeting: *const u8,
                len: usize,
                out: *mut *mut SproutSocket| {
        sprout_socket_connect(addr, key, null(), greeting, len, out)
    };
    // NULL pointers, addresses that do not resolve, impossible lengths.
    let k = public.as_ptr();
    assert_eq!(
        call(null(), k, null(), 0, &mut s),
        SproutStatus::NullPointer
    );
    assert!(last_error().contains("addr is NULL"), "{}", last_error());
    assert_eq!(
        call(local.as_ptr(), null(), null(), 0, &mut s),
        SproutStatus::NullPointer
    );
    assert_eq!(
        call(local.as_ptr(), k, null(), 0, null_mut()),
        SproutStatus::NullPointer
    );
    assert_eq!(
        call(local.as_ptr(), k, null(), 5, &mut s),
        SproutStatus::NullPointer
    );
    let g = [0u8; 600];
    assert_eq!(
        call(local.as_ptr(), k, g.as_ptr(), g.len(), &mut s),
        SproutStatus::InvalidArgument
    );
    assert!(last_error().contains("greeting"), "{}", last_error());
    assert_eq!(
        call(local.as_ptr(), k, g.as_ptr(), usize::MAX, &mut s),
        SproutStatus::InvalidArgument
    );
    let nonsense = CString::new("not an address").unwrap();
    assert_eq!(
        call(nonsense.as_ptr(), k, null(), 0, &mut s),
        SproutStatus::InvalidArgument
    );
    assert!(last_error().contains("not an address"), "{}", last_error());
    assert!(s.is_null());
    assert_eq!(
        sprout_socket_bind(nonsense.as_ptr(), private.as_ptr(), null(), &mut srv),
        SproutStatus::InvalidArgument
    );
    assert_eq!(
        sprout_socket_bind(local.as_ptr(), null(), null(), &mut srv),
        SproutStatus::NullPointer
    );
    // A handle of NULL: an error, or -1, 0, nothing.
    assert_eq!(sprout_socket_fd(null()), -1);
    assert_eq!(sprout_socket_server_fd(null()), -1);
    assert_eq!(sprout_socket_max_message(null()), 0);
    assert_eq!(sprout_socket_end_reason(null(), null_mut(), 0), 0);
    assert_eq!(
        sprout_socket_send(null(), null(), 0),
        SproutStatus::NullPointer
    );
    assert_eq!(sprout_socket_send_bye(null()), SproutStatus::NullPointer);
    assert_eq!(sprout_socket_close(null(), 0), SproutStatus::NullPointer);
    assert_eq!(
        sprout_socket_accept(null(), &mut s),
        SproutStatus::NullPointer
    );
    let mut m = SproutSocketMessage::default();
    assert_eq!(
        sprout_socket_recv(null(), &mut m, null_mut(), 0),
        SproutStatus::NullPointer
    );
    sprout_socket_free(null_mut());
    sprout_socket_server_free(null_mut());
}

/// `sprout_socket_connect` with no private key and the greeting `greeting`.
fn connect(
    addr: &CString,
    key: &[u8; 32],
    greeting: &[u8],
    out: &mut *mut SproutSocket,
) -> SproutStatus {
    sprout_socket_connect(
        addr.as_ptr(),
        key.as_ptr(),
        null(),
        greeting.as_ptr(),
        greeting.len(),
        out,
    )
}

/// Calls `f` every 5 ms until it says something but SPROUT_STATUS_DONE, at most 2.5 s.
fn until_not_done(mut f: impl FnMut() -> SproutStatus) -> SproutStatus {
    let mut st = SproutStatus::Done;
    for _ in 0..500 {
        st = f();
        if st != SproutStatus::Done {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    st
}

#[test]
fn a_live_pair_refuses_what_does_not_fit_and_says_when_it_is_over() {
    let (private, public) = keys();
    let local = CString::new("127.0.0.1:0").unwrap();
    let (mut s, mut srv): (*mut SproutSocket, *mut SproutSocketServer) = (null_mut(), null_mut());
    let mut m = SproutSocketMessage::default();
    // The address taken is an I/O error; small buffers keep what they refuse.
    assert_eq!(
        sprout_socket_bind(local.as_ptr(), private.as_ptr(), null(), &mut srv),
        SproutStatus::Ok
    );
    let mut addr = [0 as std::ffi::c_char; 64];
    let n = sprout_socket_server_local_addr(srv, addr.as_mut_ptr(), addr.len());
    let text: String = addr[..n].iter().map(|&c| c as u8 as char).collect();
    let taken = CString::new(text.clone()).unwrap();
    let mut other: *mut SproutSocketServer = null_mut();
    assert_eq!(
        sprout_socket_bind(taken.as_ptr(), private.as_ptr(), null(), &mut other),
        SproutStatus::Io
    );
    assert!(other.is_null());
    assert!(sprout_socket_server_fd(srv) >= 0);
    assert_eq!(connect(&taken, &public, b"hi", &mut s), SproutStatus::Ok);
    let max = sprout_socket_max_message(s);
    assert!(max > 1000, "{max}");
    let big = vec![7u8; max + 1];
    assert_eq!(
        sprout_socket_send(s, big.as_ptr(), big.len()),
        SproutStatus::TooLong
    );
    assert_eq!(sprout_socket_send(s, null(), 3), SproutStatus::NullPointer);
    assert_eq!(sprout_socket_send(s, big.as_ptr(), 300), SproutStatus::Ok);
    assert_eq!(
        sprout_socket_recv(s, &mut m, null_mut(), 0),
        SproutStatus::Done,
        "nothing came yet"
    );
    let mut session: *mut SproutSocket = null_mut();
    let st = until_not_done(|| sprout_socket_accept(srv, &mut session));
    assert_eq!(st, SproutStatus::Ok, "a session within 2.5 s");
    let (mut peer, mut greeting, mut len) = ([0u8; 32], [0u8; 8], 0usize);
    assert_eq!(
        sprout_socket_peer(
            session,
            peer.as_mut_ptr(),
            greeting.as_mut_ptr(),
            8,
            &mut len
        ),
        SproutStatus::Ok
    );
    assert_eq!(&greeting[..len], b"hi");
    assert_eq!(
        sprout_socket_peer(s, peer.as_mut_ptr(), greeting.as_mut_ptr(), 8, &mut len),
        SproutStatus::Done,
        "a client has no client"
    );
    let mut buf = [0u8; 100];
    let st = until_not_done(|| sprout_socket_recv(session, &mut m, buf.as_mut_ptr(), buf.len()));
    assert_eq!((st, m.len), (SproutStatus::BufferTooSmall, 300));
    let mut whole = [0u8; 300];
    assert_eq!(
        sprout_socket_recv(session, &mut m, whole.as_mut_ptr(), whole.len()),
        SproutStatus::Ok,
        "the message was kept"
    );
    assert_eq!((m.seq, m.len), (0, 300));
    assert!(whole.iter().all(|&b| b == 7));
    assert!((0..2_500_000).contains(&m.delay_us), "{m:?}");
    let mut stats = SproutStats::default();
    assert_eq!(
        sprout_socket_stats(session, null_mut()),
        SproutStatus::NullPointer
    );
    assert_eq!(sprout_socket_stats(s, &mut stats), SproutStatus::Ok);
    assert_eq!(
        (stats.state, stats.messages_sent),
        (SproutState::Established, 1)
    );
    let mut f = [0u32; 1];
    let mut flen = 0usize;
    let fst = sprout_socket_forecast(s, f.as_mut_ptr(), 0, &mut flen);
    assert!(
        (fst == SproutStatus::Ok && flen == 0) || fst == SproutStatus::BufferTooSmall,
        "{fst:?} {flen}"
    );
    // Closed: sends refused, the end said, the session told.
    assert_eq!(sprout_socket_close(s, 0), SproutStatus::Ok);
    assert_eq!(sprout_socket_send(s, big.as_ptr(), 1), SproutStatus::Closed);
    assert_eq!(
        sprout_socket_recv(s, &mut m, buf.as_mut_ptr(), buf.len()),
        SproutStatus::Closed
    );
    assert!(sprout_socket_end_reason(s, null_mut(), 0) > 0);
    let st = until_not_done(|| sprout_socket_recv(session, &mut m, buf.as_mut_ptr(), buf.len()));
    assert_eq!(st, SproutStatus::Closed, "the session heard of the close");
    sprout_socket_free(s);
    sprout_socket_server_free(srv);
    // A session outlives its server's free.
    assert_eq!(
        sprout_socket_recv(session, &mut m, buf.as_mut_ptr(), buf.len()),
        SproutStatus::Closed
    );
    sprout_socket_free(session);
}

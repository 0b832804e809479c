//! The end of the client's recording: FIN until the server's FIN-ACK, then the transfer of
//! the server's recording of the uplink, chunk by chunk, and DONE.

use sprout_core::direction::{Direction, Load};
use sprout_core::time::{Duration, Instant};
use sprout_os::signals::SignalWatcher;

use crate::runtime::client_run::{ClientEnd, REPEAT};
use crate::runtime::error::SaturatorError;
use crate::runtime::socket::{monotonic_now, realtime_offset_ns, wait, BATCH, RECV_BUFFER_BYTES};
use crate::summary::Summary;
use crate::transfer::{decode_result, Reassembly};
use crate::wire::{decode, encode, Message, ResultMeta};

/// Chunks asked for at once.
const CHUNKS_PER_REQUEST: u32 = 64;
/// How long FINs are repeated without a FIN-ACK before the server counts as gone.
const FIN_TIMEOUT: Duration = Duration::from_secs(10);

/// How the end of a recording went: the uplink's recording (or why it is missing), and
/// whether the server acknowledged the end at all.
pub(crate) struct Ending {
    /// The server's recording of the uplink.
    pub(crate) up: Option<UplinkRecording>,
    /// Why it is missing (when the mode has it).
    pub(crate) up_error: Option<String>,
    /// The server acknowledged the FIN.
    pub(crate) acknowledged: bool,
}

/// The uplink's recording as the server sent it: its summary and arrivals (ms, sorted).
pub(crate) type UplinkRecording = (Summary, Vec<u32>);

/// What the fetch is at.
struct Fetch {
    session: u64,
    mode: Load,
    /// Largest recording accepted, bytes.
    max_blob: usize,
    meta: Option<ResultMeta>,
    reassembly: Option<Reassembly>,
    next_request: Instant,
    result: Option<UplinkRecording>,
    error: Option<String>,
}

/// Sends FIN until the server's FIN-ACK (at most 10 s), then fetches the uplink's recording
/// if the mode has one and it is at most `max_blob` bytes (what the packets sent can be
/// owed), until `deadline`. Returns it, or why not.
pub(crate) fn finish_client(
    end: &ClientEnd,
    session: u64,
    mode: Load,
    max_blob: usize,
    deadline: Instant,
    signals: &SignalWatcher,
) -> Result<Ending, SaturatorError> {
    let fin_deadline = (monotonic_now() + FIN_TIMEOUT).min(deadline);
    let mut out = Vec::new();
    let mut buf = vec![0u8; RECV_BUFFER_BYTES];
    let mut f = Fetch {
        session,
        mode,
        max_blob,
        meta: None,
        reassembly: None,
        next_request: Instant::ZERO,
        result: None,
        error: None,
    };
    let mut next_fin = Instant::ZERO;
    loop {
        let now = monotonic_now();
        if now >= deadline || (f.meta.is_none() && now >= fin_deadline) {
            f.error = Some(match &f.reassembly {
                None => "the server did not acknowledge the end of the recording in time".into(),
                Some(r) => format!(
                    "{} of {} chunks of the server's recording still missing at the deadline",
                    r.missing(),
                    r.meta().chunks
                ),
            });
            break;
        }
        if signals.take().is_some() {
            f.error = Some("interrupted while fetching the server's recording".into());
            break;
        }
        if f.meta.is_none() && now >= next_fin {
            send_fins(end, session, &mut out);
            next_fin = now + REPEAT;
        }
        let offset = realtime_offset_ns();
        let mut progressed = false;
        for s in end.socks() {
            for _ in 0..BATCH {
                let Some(r) = s.recv(&mut buf, offset, now)? else {
                    break;
                };
                progressed |= f.on_message(decode(&buf[..r.len.min(buf.len())]));
            }
        }
        if f.meta.is_some() && f.step(end, now, progressed, &mut out) {
            break;
        }
        wait(&end.socks(), now + Duration::from_millis(5));
    }
    encode(&Message::Done { session }, 0, &mut out);
    for _ in 0..3 {
        let _ = end.feedback().send(&out);
        if end.fb.is_some() {
            let _ = end.data.send(&out);
        }
    }
    Ok(Ending {
        up: f.result,
        up_error: f.error,
        acknowledged: f.meta.is_some(),
    })
}

/// A FIN over the data path, and over the feedback path if there is one.
fn send_fins(end: &ClientEnd, session: u64, out: &mut Vec<u8>) {
    encode(
        &Message::Fin {
            session,
            feedback_path: false,
        },
        0,
        out,
    );
    let _ = end.data.send(out);
    if let Some(f) = &end.fb {
        encode(
            &Message::Fin {
                session,
                feedback_path: true,
            },
            0,
            out,
        );
        let _ = f.send(out);
    }
}

impl Fetch {
    /// Takes a FIN-ACK or a chunk; whether it brought a missing chunk.
    fn on_message(&mut self, msg: Result<Message<'_>, crate::wire::DecodeError>) -> bool {
        match msg {
            Ok(Message::FinAck(m)) if m.session == self.session && self.meta.is_none() => {
                self.meta = Some(m);
                if m.blob_len as usize > self.max_blob {
                    self.error = Some(format!(
                        "the server announced a {} byte recording of the uplink, more than the \
                         packets sent could fill ({} bytes): refused",
                        m.blob_len, self.max_blob
                    ));
                } else if m.blob_len > 0 && self.mode.carries(Direction::Up) {
                    self.reassembly = Some(Reassembly::new(m));
                }
                false
            }
            Ok(Message::ResultChunk {
                meta: m,
                index,
                data,
            }) if m.session == self.session => match self.reassembly.as_mut() {
                Some(re) => {
                    let before = re.missing();
                    re.add(&m, index, data);
                    re.missing() < before
                }
                None => false,
            },
            _ => false,
        }
    }

    /// After the FIN-ACK: decodes the complete recording or asks for missing chunks; whether
    /// the fetch is over.
    fn step(&mut self, end: &ClientEnd, now: Instant, progressed: bool, out: &mut Vec<u8>) -> bool {
        let Some(re) = self.reassembly.as_ref() else {
            if self.mode.carries(Direction::Up) && self.error.is_none() {
                self.error = Some("the server had no recording of the uplink".into());
            }
            return true;
        };
        if re.missing() == 0 {
            match re.complete().and_then(decode_result) {
                Some(r) => self.result = Some(r),
                None => {
                    self.error = Some("the server's recording arrived damaged (checksum)".into())
                }
            }
            return true;
        }
        if progressed {
            // Ask for the next batch as soon as this one is in.
            self.next_request = self.next_request.min(now + Duration::from_millis(5));
        }
        if now >= self.next_request {
            if let Some((first, count)) = re.wanted(CHUNKS_PER_REQUEST) {
                encode(
                    &Message::ResultRequest {
                        session: re.meta().session,
                        first,
                        count,
                    },
                    0,
                    out,
                );
                let _ = end.feedback().send(out);
            }
            self.next_request = now + REPEAT;
        }
        false
    }
}

//! What an application stream's datagrams carry besides its data (issue 23): a stream whose
//! peer sends nothing gives it a forecast once per heartbeat interval, not every tick, and no
//! expected counts; once the peer sends data, every tick's forecast rides the stream again.
//! Through a stall of its own direction, a stream whose data waits sends few heartbeats.

use crate::common::{deliver_due, InFlight};
use sprout_core::{wire, Config, Connection, Instant};

/// One datagram of A's seen on the way to B: when A sent it, and whether it carried data, a
/// forecast and expected counts.
#[derive(Clone, Copy, Debug)]
struct Seen {
    at_us: u64,
    data: bool,
    forecast: bool,
    expected: bool,
}

/// A sends a 1,200-byte datagram every 38 ms (250 kbit/s) for `ms` milliseconds over a
/// 20 ms path both ways with room to spare; B sends one every 38 ms too from `b_from_ms` on.
/// Returns what A sent.
fn run(ms: u64, b_from_ms: u64) -> Vec<Seen> {
    let mut a = Connection::new(Config::default(), Instant::ZERO).unwrap();
    let mut b = Connection::new(Config::default(), Instant::ZERO).unwrap();
    let (mut to_b, mut to_a): (InFlight, InFlight) = (vec![], vec![]);
    let mut seen = Vec::new();
    let mut buf = Vec::new();
    for now_ms in 0..ms {
        let now = Instant::from_millis(now_ms);
        deliver_due(&mut b, &mut to_b, now_ms);
        deliver_due(&mut a, &mut to_a, now_ms);
        if now_ms % 38 == 0 {
            a.send(vec![1; 1200]);
            if now_ms >= b_from_ms {
                b.send(vec![2; 1200]);
            }
        }
        while let Some(t) = a.poll_transmit(now, &mut buf) {
            let d = wire::decode(&buf).unwrap();
            seen.push(Seen {
                at_us: now.as_micros(),
                data: !t.heartbeat,
                forecast: d.header.feedback.is_some(),
                expected: d.header.feedback.is_some_and(|f| f.expected().is_some()),
            });
            to_b.push((now_ms + 20, buf.clone()));
        }
        while b.poll_transmit(now, &mut buf).is_some() {
            to_a.push((now_ms + 20, buf.clone()));
        }
    }
    seen
}

/// Gaps, in ms, between successive forecast-carrying data datagrams of A sent in `[from, to)` ms.
fn forecast_gaps(seen: &[Seen], from: u64, to: u64) -> Vec<u64> {
    let at: Vec<u64> = seen
        .iter()
        .filter(|s| s.data && s.forecast && (from * 1000..to * 1000).contains(&s.at_us))
        .map(|s| s.at_us / 1000)
        .collect();
    at.windows(2).map(|w| w[1] - w[0]).collect()
}

#[test]
fn a_stream_to_an_idle_peer_carries_a_forecast_once_per_heartbeat_interval() {
    let seen = run(4_000, 2_000);
    let data = seen.iter().filter(|s| s.data).count();
    assert!(data > 100, "{data} data datagrams");
    // B idle (its application has sent nothing, or nothing for a second): A's data carries
    // a forecast at most once per heartbeat interval (50 ms), so every other datagram at
    // 38 ms apart, and never the expected counts.
    let idle = forecast_gaps(&seen, 0, 2_000);
    assert!(idle.len() > 20, "{idle:?}");
    assert!(idle.iter().all(|&g| g >= 50), "{idle:?}");
    let idle_data: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.data && s.at_us < 2_000_000)
        .collect();
    let with = idle_data.iter().filter(|s| s.forecast).count();
    assert!(
        with * 3 < idle_data.len() * 2,
        "{with} of {}",
        idle_data.len()
    );
    assert!(idle_data.iter().all(|s| !s.expected));
    // B sends data from 2 s on: each of A's datagrams carries that tick's forecast again
    // (38 ms apart), with the expected counts B's waiting data would use.
    let busy = forecast_gaps(&seen, 2_200, 4_000);
    assert!(
        busy.iter().filter(|&&g| g < 50).count() * 2 > busy.len(),
        "{busy:?}"
    );
    assert!(seen
        .iter()
        .any(|s| s.data && s.expected && s.at_us >= 2_200_000));
}

/// A sends 250 kbit/s to an idle B over a 20 ms path both ways. From 1 s to 8 s A's
/// direction stalls (its datagrams wait and arrive at 8 s); from 10 s to 22 s B's direction
/// is out (its datagrams are lost). Returns when A sent each heartbeat, in ms.
fn heartbeats_through_outages() -> Vec<u64> {
    let mut a = Connection::new(Config::default(), Instant::ZERO).unwrap();
    let mut b = Connection::new(Config::default(), Instant::ZERO).unwrap();
    let (mut to_b, mut to_a): (InFlight, InFlight) = (vec![], vec![]);
    let mut beats = Vec::new();
    let mut buf = Vec::new();
    for now_ms in 0..23_000u64 {
        let now = Instant::from_millis(now_ms);
        deliver_due(&mut b, &mut to_b, now_ms);
        deliver_due(&mut a, &mut to_a, now_ms);
        if now_ms % 38 == 0 {
            a.send(vec![1; 1200]);
        }
        while let Some(t) = a.poll_transmit(now, &mut buf) {
            if t.heartbeat {
                beats.push(now_ms);
            }
            let at = if (1_000..8_000).contains(&now_ms) {
                8_000
            } else {
                now_ms + 20
            };
            to_b.push((at, buf.clone()));
        }
        while b.poll_transmit(now, &mut buf).is_some() {
            if !(10_000..22_000).contains(&now_ms) {
                to_a.push((now_ms + 20, buf.clone()));
            }
        }
    }
    beats
}

#[test]
fn a_waiting_stream_sends_few_heartbeats_into_a_stall_of_its_own_direction() {
    let beats = heartbeats_through_outages();
    let within = |from: u64, to: u64| beats.iter().filter(|&&t| (from..to).contains(&t)).count();
    // Its direction stalled, B still heard and reporting nothing new: after 250 ms without
    // progress one heartbeat a second (they would only wait in the link's queue), not one
    // every 50 ms.
    assert!(within(1_500, 8_000) <= 8, "{beats:?}");
    // B's direction out, A's working: A hears nothing, so once its window has closed (its
    // data goes on for a while at the rate the link recently carried) its heartbeats, the
    // receiver's only word that A pauses, go every 50 ms.
    assert!(within(15_000, 22_000) >= 100, "{beats:?}");
}

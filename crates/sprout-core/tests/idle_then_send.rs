//! After a quiet spell a sender's first datagram goes at once: while a peer sends nothing but
//! heartbeats, its receiver's forecast must not fall to zero (which holds the next data back
//! until the forecast climbs again). SproutTunnel on the wide model answered a ping after 3 or
//! 10 s of idle only after 2-16 s.

use crate::common::{deliver_due, InFlight};
use sprout_core::{Config, Connection, Instant};

/// A and B over a 20 ms path both ways with room to spare; A sends one 1,200-byte datagram at
/// 0 ms and another at `idle_ms`. Returns how long the second waited, in ms.
fn wait_after_idle(config: &Config, idle_ms: u64) -> u64 {
    let mut a = Connection::new(config.clone(), Instant::ZERO).unwrap();
    let mut b = Connection::new(config.clone(), Instant::ZERO).unwrap();
    let (mut to_b, mut to_a): (InFlight, InFlight) = (vec![], vec![]);
    let mut buf = Vec::new();
    let limit = idle_ms + 30_000;
    for now_ms in 0..limit {
        let now = Instant::from_millis(now_ms);
        deliver_due(&mut b, &mut to_b, now_ms);
        deliver_due(&mut a, &mut to_a, now_ms);
        if now_ms == 0 || now_ms == idle_ms {
            a.send(vec![1; 1200]);
        }
        while let Some(t) = a.poll_transmit(now, &mut buf) {
            if !t.heartbeat && now_ms >= idle_ms {
                return now_ms - idle_ms;
            }
            to_b.push((now_ms + 20, buf.clone()));
        }
        while b.poll_transmit(now, &mut buf).is_some() {
            to_a.push((now_ms + 20, buf.clone()));
        }
    }
    limit
}

#[test]
fn data_after_a_quiet_spell_goes_at_once_on_both_models() {
    for (name, config) in [("paper", Config::default()), ("wide", Config::wide())] {
        let waits: Vec<u64> = [1_000, 3_000, 10_000]
            .iter()
            .map(|&idle| wait_after_idle(&config, idle))
            .collect();
        // Before the wide forecast summed a spread-out belief value by value, the wide
        // model's waits were [0, 33000, 40000] ms (30 s: never within the run).
        assert!(
            waits.iter().all(|&w| w <= 20),
            "{name}: waits after 1, 3, 10 s of quiet: {waits:?} ms"
        );
    }
}

/// While only heartbeats come (each a tick that saw at least one packet, the ticks between
/// skipped), the belief spreads; the cautious forecast of 8 ticks must stay above zero, as
/// the paper model's does, however long the quiet lasts.
#[test]
fn a_belief_spread_by_quiet_keeps_a_forecast_above_zero() {
    use sprout_core::estimator;
    for config in [Config::default(), Config::wide()] {
        let mut e = estimator::build(&config);
        let mut f = [0u32; 8];
        e.evolve();
        e.observe(1.0);
        for i in 0..1_000 {
            e.evolve();
            if i % 5 == 0 || i % 5 == 2 {
                e.observe_at_least(1.0);
            }
            e.forecast(&mut f);
            assert!(
                f[7] >= 3,
                "tick {i}: forecast {f:?} at {:.0} packets/s ({:?})",
                e.rate_pps(),
                config.estimator
            );
        }
    }
}

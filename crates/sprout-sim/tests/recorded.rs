//! The receiver-state recorder (`sprout_sim::recorded`): both directions are recorded, the
//! idle one too, at the ticks' own times, and a clone ticks and forecasts on its own.

use std::sync::Arc;

use sprout_core::time::{Duration, Instant};
use sprout_link::{constant_rate_trace, StepwiseLink};
use sprout_sim::recorded::{record, Direction, RecordOptions};

/// 24 Mbit/s (2,000 packets/s of 1,500 bytes) both ways for 3 s.
fn three_seconds() -> sprout_sim::recorded::Recording {
    let trace = Arc::new(constant_rate_trace("c24", 24.0, 3.0).unwrap());
    let options = RecordOptions {
        duration: Duration::from_secs(3),
        record_from: Duration::from_millis(500),
        ..RecordOptions::default()
    };
    record(trace.clone(), trace, &options).unwrap()
}

#[test]
fn both_directions_are_recorded_tick_by_tick() {
    let rec = three_seconds();
    // The bulk sender filled the downlink (most of 24 Mbit/s once started); the uplink carried
    // only the mobile's feedback and heartbeats.
    assert!(
        rec.loaded_mbit_per_s() > 15.0,
        "{}",
        rec.loaded_mbit_per_s()
    );
    assert!(rec.uplink.bytes_delivered < rec.downlink.bytes_delivered / 20);
    for d in Direction::ALL {
        let ats: Vec<Instant> = rec.of(d).map(|s| s.at).collect();
        // From 0.5 s to 3 s, every 20 ms tick: about 125 of them (ticks start with the first
        // datagram, tens of ms in).
        assert!(
            (115..=126).contains(&ats.len()),
            "{d:?}: {} snapshots",
            ats.len()
        );
        assert!(ats[0] >= Instant::from_millis(500), "{d:?}: {:?}", ats[0]);
        assert!(
            ats.windows(2)
                .all(|w| w[1] - w[0] == Duration::from_millis(20)),
            "{d:?}: ticks 20 ms apart"
        );
        // Each snapshot is the receiver just before that tick: it is due exactly then.
        assert!(rec
            .of(d)
            .all(|s| s.receiver.next_tick() == Some(s.at) && s.direction == d));
    }
    let ran = rec.ticks;
    assert!(ran[0] >= 140 && ran[1] >= 140, "ticks run {ran:?}");
}

#[test]
fn a_clone_ticks_once_and_forecasts() {
    let rec = three_seconds();
    let tick = Duration::from_millis(20);
    for d in Direction::ALL {
        let s = rec.of(d).last().unwrap();
        let mut r = s.receiver.clone();
        let before = r.stats().ticks;
        r.on_timeout(s.at);
        assert_eq!(r.stats().ticks, before + 1, "{d:?}: one tick");
        assert_eq!(r.next_tick(), Some(s.at + tick));
        let fb = r.feedback().expect("a forecast");
        let counts = fb.forecast();
        assert_eq!(counts.len(), 8, "{d:?}");
        assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{d:?}: {counts:?}");
        if d == Direction::Loaded {
            // 2,000 packets/s: 40 a tick; the cautious 160 ms forecast is well above nothing.
            assert!(counts[7] > 40, "{d:?}: {counts:?}");
        }
        // The idle direction's peer sends no data: application-limited, so its feedback
        // carries the expected counts too (the second forecast a tick costs).
        if d == Direction::Idle {
            assert!(fb.expected().is_some(), "{d:?}: no expected counts");
        }
        // The snapshot itself is untouched.
        assert_eq!(s.receiver.stats().ticks, before);
    }
}

#[test]
fn subsampling_keeps_one_tick_in_every_and_a_cap() {
    let trace = Arc::new(
        StepwiseLink {
            duration_s: 2.0,
            min_mbit: 5.0,
            max_mbit: 50.0,
            ..StepwiseLink::default()
        }
        .generate("step")
        .unwrap(),
    );
    let options = RecordOptions {
        duration: Duration::from_secs(2),
        every: 5,
        max_per_direction: 12,
        ..RecordOptions::default()
    };
    let rec = record(trace.clone(), trace, &options).unwrap();
    for d in Direction::ALL {
        let ats: Vec<Instant> = rec.of(d).map(|s| s.at).collect();
        assert_eq!(ats.len(), 12, "{d:?}");
        assert!(
            ats.windows(2)
                .all(|w| w[1] - w[0] == Duration::from_millis(100)),
            "{d:?}: one 20 ms tick in 5"
        );
    }
}
